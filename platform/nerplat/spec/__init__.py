"""The YAML spec language: loading, interpolation, schema and cross-field validation."""
