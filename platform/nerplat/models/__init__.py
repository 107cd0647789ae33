"""Encoders and heads. Torch lives here; Ray and MLflow do not."""
