"""Mixed precision: autocast, loss scaling, custom autograd precision, half casts (NRN2xx)."""
