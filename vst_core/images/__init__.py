"""Grounding in the images: regions (boxes from a file or a detector), the embedding cache, and the
grounder that turns images and phrases into GROOVIST, CLIPScore and RoViST-VG-style records."""
