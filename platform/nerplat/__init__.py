"""nerplat: declarative, Ray-distributed tuning for imbalanced and low-resource NER."""

__version__ = "0.1.0"
