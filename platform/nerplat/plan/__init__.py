"""The compiled plan: plain, JSON-serialisable data that the runner and a single trial consume.

`compiler.compile_plan(SpecSource(spec, profile), catalog)` -> `model.Plan` of `model.Arm`s; an arm's
`trial_config(sampled, seed, partition, eval_split)` is one trial's `nerplat.config.trial.TrialConfig`.
"""
