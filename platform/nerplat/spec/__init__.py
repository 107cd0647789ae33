"""The YAML spec language: loading, interpolation, profiles, schema and cross-field validation.

Entry points: `nerplat.spec.validate.load_spec(SpecSource(path, profile), catalog)` returns a `ValidatedSpec`
or raises one `UserInputError` with every problem; `validate_spec_file` also checks every profile.
The compiler (`nerplat.plan.compiler`) turns a validated spec into a plan. Modules, in the order a
spec goes through them: loader (and interpolation), profiles, schema (+ validation_errors), params
(+ distributions), datasets, samplers, methods, rules, validate. docs/spec.md is the reference.
"""
