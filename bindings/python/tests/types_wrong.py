"""Wrong uses that `mypy --strict` must refuse (test_types.py checks the checker)."""
import skycmd

model = skycmd.Model.open("m.gguf")
model.decide(42)                                     # not a request
print(model.decide("{}")["danger"].confidence + 1.0)  # None for a noul answer
model.tokenizer.encode(b"bytes")                     # text is str
print([a.percent for a in model.decide("{}").values()])  # answers are typed
