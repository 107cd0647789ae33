from nerplat.plan.labels import arm_label_parts, arm_labels


def test_a_label_is_the_method_when_dataset_and_sampler_are_the_plans_only_ones():
    cells = [("conll2003", "untyped+low_resource-100", m) for m in ("ce", "mom", "auc2t")]
    assert arm_labels(cells) == ["ce", "mom", "auc2t"]


def test_a_sampler_setting_that_varies_is_kept_without_the_parts_all_settings_share():
    cells = [("conll2003", f"untyped+low_resource-{n}", m) for n in (20, 50) for m in ("ce", "mom")]
    assert arm_labels(cells) == ["ce · low_resource-20", "mom · low_resource-20", "ce · low_resource-50", "mom · low_resource-50"]
    assert arm_label_parts(cells)[0] == ("ce", "low_resource-20")


def test_a_dataset_that_varies_is_kept_and_every_label_stays_distinct():
    cells = [
        (d, s, m) for d in ("conll2003", "wnut17") for s in ("full", "untyped", "untyped+low_resource-20") for m in ("ce", "crf")
    ]
    labels = arm_labels(cells)
    assert len(set(labels)) == len(cells)
    assert labels[:3] == ["ce · full · conll2003", "crf · full · conll2003", "ce · untyped · conll2003"]
