"""`nerplat export`: a model folder a user can take elsewhere.

Softmax heads become a Hugging Face token-classification folder: the encoder and the head's linear
layer are exactly `AutoModelForTokenClassification`'s encoder and classifier, and labelling each word
on its first sub-token is the pipeline's `aggregation_strategy="first"`. Other heads decode with more
than an argmax over sub-token logits (Viterbi, Algorithm 1 with tuned thresholds, one-vs-all
sigmoids), which that class cannot express: they are exported as the MLflow pyfunc model folder.
Each folder gets a README.md saying what it holds and how to load it; it is written whole or not at
all, with the umask's permissions (`nerplat.serving.files`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from nerplat.models.encoders import quiet_transformers
from nerplat.models.heads.registry import head_serving
from nerplat.serving.bundle import MLFLOW_ARTIFACT, TaggerBundle, save_bundle
from nerplat.serving.files import output_folder
from nerplat.serving.mlflow_models import model_signature, pinned_requirements

HF_README = """# nerplat tagger `{source}` (Hugging Face token classification)

Head: softmax over {count} labels ({labels}); encoder: {encoder} (windows of {max_length} sub-tokens).

```python
from transformers import pipeline
tagger = pipeline("token-classification", model="{folder}", aggregation_strategy="first")
tagger("EU rejects German call to boycott British lamb .")
```

`aggregation_strategy="first"` labels each word by its first sub-token, as nerplat trains and
predicts. The pipeline groups tags into spans the lenient (conlleval) way, where an I- tag after O
opens a span, as `nerplat predict --spans lenient` does; nerplat's scores and its default spans are
strict IOB2. Sentences longer than {max_length} sub-tokens: nerplat cuts them into overlapping windows
(stride {stride}); pass `stride=` to the pipeline for a similar effect.
"""

MLFLOW_README = """# nerplat tagger `{source}` (MLflow pyfunc model)

Head: {head} over {count} labels ({labels}); encoder: {encoder}. The decoding ({decoding}) is
nerplat's own, so this is an MLflow model folder, not a Hugging Face one. It needs nerplat installed.

```python
import mlflow, pandas as pd
model = mlflow.pyfunc.load_model("{folder}")
model.predict(pd.DataFrame({{"text": ["EU rejects German call to boycott British lamb ."]}}))
```

or `nerplat predict {folder} --text "..."`, or `mlflow models serve -m {folder} --env-manager local`.
The weights, tokenizer and decoding settings are in `artifacts/tagger/` (`tagger.json` says which).
"""


def export_model(bundle: TaggerBundle, model_folder: Path | None, out: Path, source: str) -> str:
    """Writes `out` (new, or an empty folder) whole or not at all; returns the kind written: "huggingface" or "mlflow".

    `model_folder` is the MLflow model, copied for heads that are not softmax; None when MODEL was
    a bundle folder, which is then wrapped in a new MLflow model.
    """
    labels = ", ".join(bundle.labels)
    with output_folder(out) as folder:
        if bundle.head.name == "softmax":
            _write_huggingface(bundle, folder)
            readme = HF_README.format(
                source=source, count=len(bundle.labels), labels=labels, encoder=bundle.encoder.name, folder=out,
                max_length=bundle.encoder.max_length, stride=bundle.encoder.window_stride,
            )
            kind = "huggingface"
        else:
            _write_mlflow(bundle, model_folder, folder)
            readme = MLFLOW_README.format(
                source=source, head=bundle.head.name, count=len(bundle.labels), labels=labels, encoder=bundle.encoder.name,
                decoding=head_serving(bundle.head.name).decoding or bundle.head.name, folder=out,
            )
            kind = "mlflow"
        (folder / "README.md").write_text(readme)
    return kind


def _write_huggingface(bundle: TaggerBundle, out: Path) -> None:
    import transformers

    tagger = bundle.tagger
    config = transformers.AutoConfig.for_model(**tagger.encoder.config.to_dict())
    config.num_labels = len(bundle.labels)
    config.id2label = dict(enumerate(bundle.labels))
    config.label2id = {label: i for i, label in enumerate(bundle.labels)}
    with quiet_transformers():  # its load report, and the "Writing model shards" bar of save_pretrained
        model = transformers.AutoModelForTokenClassification.from_config(config)
        model.base_model.load_state_dict(tagger.encoder.state_dict())
        model.classifier.load_state_dict(tagger.head.classifier.state_dict())
        model.save_pretrained(out)
        bundle.tokenizer.save_pretrained(out)


def _write_mlflow(bundle: TaggerBundle, model_folder: Path | None, out: Path) -> None:
    if model_folder is not None:
        shutil.copytree(model_folder, out, dirs_exist_ok=True)
        return
    import mlflow

    from nerplat.serving import pyfunc  # lazy: MLflow, which only the mlflow format needs

    with tempfile.TemporaryDirectory(prefix="nerplat-export-") as directory:
        saved = save_bundle(
            Path(directory) / "tagger", bundle.tagger, bundle.tokenizer, bundle.labels, bundle.head, bundle.encoder
        )
        out.rmdir()  # save_model creates the folder itself
        mlflow.pyfunc.save_model(
            str(out), python_model=pyfunc.TaggerModel(), artifacts={MLFLOW_ARTIFACT: str(saved)},
            signature=model_signature(), input_example=pyfunc.input_example(), pip_requirements=pinned_requirements(),
        )
