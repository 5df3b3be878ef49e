"""The writers of exported folders, which need torch: the ONNX graph (and its int8 quantisation) and the static
token-embedding table. What reads those folders back, without torch, is in `setfit_lite.runtime`."""
