#!/usr/bin/env python3
"""Makes imageproc/testdata's references: what transformers' ViTImageProcessor and Pillow compute from the images
that imageproc/draw_test.go draws with Go's image package (PNG, and 4:2:0 JPEG from image/jpeg).

Run with Debian's python3 (python3-torch 1.13, python3-pil 9.4.0, python3-numpy) on the vendored transformers 4.51:

    go test ./imageproc -run DrawnImages -update      # (re)draws the images
    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_vit_image_fixtures.py imageproc/testdata

It also writes cmyk_300x200.jpg: Pillow's CMYK JPEG of scene_300x200.png (Go cannot write one), to check that path,
and pil*.jpg and ycck_97x61.jpg (pillow_jpegs): the JPEG kinds image/jpeg cannot write, for the decoder's checks
(the YCCK one through the system's libjpeg: libjpeg62-turbo-dev and a C compiler).

reference.safetensors holds, for every image NAME:
  decoded/NAME               uint8 [H][W][3]   PIL.Image.open(NAME).convert("RGB"), as a dataset loader hands it over
  pixel_values/CONFIG/NAME   float32 [3][h][w] ViTImageProcessor.from_json_file(CONFIG.json)(that image)
                             (for vit-in21k, only the IN21K_IMAGES)
and resized/NAME/WxH, uint8 [H][W][3]: Image.resize((W, H), Image.BILINEAR) of two decoded PNGs at assorted sizes.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import numpy as np
import PIL
from PIL import Image
from safetensors.numpy import save_file
from transformers import ViTImageProcessor

CONFIGS = {
    # google/vit-base-patch16-224-in21k's preprocessor_config.json as published.
    "vit-in21k": {"do_normalize": True, "do_resize": True, "feature_extractor_type": "ViTFeatureExtractor",
                  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 224},
    # Another shape and ImageNet's statistics, so that nothing square or symmetric hides a transposition.
    "imagenet-128x80": {"image_processor_type": "ViTImageProcessor", "do_resize": True, "do_rescale": True,
                        "rescale_factor": 0.00392156862745098, "do_normalize": True,
                        "size": {"height": 128, "width": 80}, "resample": 2,
                        "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
}

RESIZES = [(1, 1), (7, 300), (224, 224), (301, 199), (13, 5), (150, 100), (97, 200)]
# The published config's 224×224 pixel values are 600 kB an image: kept for these only.
IN21K_IMAGES = {"scene_300x200.png", "scene_300x200.jpg", "gray_150x100.png"}


def pillow_jpegs(out):
    """Writes JPEGs of the kinds image/jpeg cannot write, with Pillow (libjpeg-turbo), so that the decoder is checked
    on each: 4:4:4 and 4:2:2 chroma, progressive scans (colour and gray), and an image of saturated stripes at low
    quality, whose ringing takes the inverse DCT's outputs past 0 and 255 (the range limit)."""
    scene = Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB")
    scene.save(os.path.join(out, "pil444_97x61.jpg"), quality=95, subsampling=0)
    scene.save(os.path.join(out, "pil422_97x61.jpg"), quality=75, subsampling=1)
    scene.save(os.path.join(out, "pilprog_97x61.jpg"), quality=30, subsampling=2, progressive=True)
    scene.convert("L").save(os.path.join(out, "pilproggray_97x61.jpg"), quality=60, progressive=True)
    y, x = np.mgrid[0:45, 0:53]
    stripes = np.zeros((45, 53, 3), dtype=np.uint8)
    stripes[..., 0] = np.where((x // 2) % 2 == 0, 255, 0)
    stripes[..., 1] = np.where((y // 3) % 2 == 0, 255, 0)
    stripes[..., 2] = np.where(((x + y) // 4) % 2 == 0, 0, 255)
    Image.fromarray(stripes).save(os.path.join(out, "pilstripes_53x45.jpg"), quality=15, subsampling=2)
    ycck_jpeg(np.asarray(scene), os.path.join(out, "ycck_97x61.jpg"))


def ycck_jpeg(rgb, path):
    """Writes a YCCK JPEG (Adobe transform 2, as Photoshop saves CMYK) of rgb with a black ramp, through the system's
    libjpeg (scripts/make_ycck_jpeg.c: Pillow writes CMYK JPEGs untransformed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "make_ycck_jpeg")
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(here, "make_ycck_jpeg.c"), "-ljpeg"], check=True)
        h, w, _ = rgb.shape
        y, x = np.mgrid[0:h, 0:w]
        k = (x * 3 + y * 5) % 97
        cmyk = np.stack([255 - rgb[..., 0], 255 - rgb[..., 1], 255 - rgb[..., 2], k], -1).astype(np.uint8)
        jpeg = subprocess.run([exe, str(w), str(h), "80"], input=cmyk.tobytes(), capture_output=True, check=True).stdout
    with open(path, "wb") as f:
        f.write(jpeg)


def main(out):
    assert PIL.__version__ == "9.4.0", PIL.__version__
    Image.open(os.path.join(out, "scene_300x200.png")).convert("CMYK").save(
        os.path.join(out, "cmyk_300x200.jpg"), quality=90)
    pillow_jpegs(out)
    names = sorted(n for n in os.listdir(out) if n.endswith((".png", ".jpg")))
    tensors = {}
    for cname, cfg in CONFIGS.items():
        path = os.path.join(out, cname + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        proc = ViTImageProcessor.from_json_file(path)
        for name in names:
            if cname == "vit-in21k" and name not in IN21K_IMAGES:
                continue
            img = Image.open(os.path.join(out, name)).convert("RGB")
            pv = proc(img, return_tensors="np")["pixel_values"][0]
            assert pv.dtype == np.float32, pv.dtype
            tensors["pixel_values/%s/%s" % (cname, name)] = np.ascontiguousarray(pv)
    for name in names:
        img = Image.open(os.path.join(out, name))
        print(name, img.mode, img.size, file=sys.stderr)
        rgb = img.convert("RGB")
        tensors["decoded/" + name] = np.asarray(rgb, dtype=np.uint8).copy()
        if name in ("scene_300x200.png", "scene_97x61.png"):
            for w, h in RESIZES:
                tensors["resized/%s/%dx%d" % (name, w, h)] = np.asarray(
                    rgb.resize((w, h), Image.BILINEAR), dtype=np.uint8).copy()
    save_file(tensors, os.path.join(out, "reference.safetensors"),
              metadata={"made_by": "scripts/make_vit_image_fixtures.py", "pillow": PIL.__version__,
                        "transformers": __import__("transformers").__version__})


if __name__ == "__main__":
    main(sys.argv[1])
