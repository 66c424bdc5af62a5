"""RoViST-VG's default names, apart so its model's module and its spec read them without importing each other."""

#: The authors' ViT, whose configuration and image processor their checkpoint's image encoder uses.
VIT = "google/vit-base-patch16-224-in21k"
