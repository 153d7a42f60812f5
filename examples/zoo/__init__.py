"""Real models built as WebNN graphs (LeNet, MobileNetV2), their data loaders
and independent float64 NumPy references.  Data: ../data/ (see the READMEs
there for provenance and licenses)."""
