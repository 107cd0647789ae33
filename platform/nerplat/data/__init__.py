"""Corpora, their readers and the samplers that reshape training sets. No torch, Ray or MLflow here."""
