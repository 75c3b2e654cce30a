#!/usr/bin/env python3
"""Makes imageproc/testdata's references: what transformers' ViTImageProcessor and Pillow compute from the images
that imageproc/draw_test.go draws with Go's image package (PNG, and 4:2:0 JPEG from image/jpeg).

Run with Debian's python3 (python3-torch 1.13, python3-pil 9.4.0, python3-numpy) on the vendored transformers 4.51:

    go test ./imageproc -run DrawnImages -update      # (re)draws the images
    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_vit_image_fixtures.py imageproc/testdata

It also writes cmyk_300x200.jpg: Pillow's CMYK JPEG of scene_300x200.png (Go cannot write one), to check that path,
and pil*.jpg, narrow*.jpg and ycck_97x61.jpg (pillow_jpegs): the JPEG kinds image/jpeg cannot write, for the decoder's checks
(the YCCK one through the system's libjpeg: libjpeg62-turbo-dev and a C compiler); rst*.jpg (restart_jpegs): JPEGs
with restart markers, and sub*.jpg, rgb*.jpg and yccrgbids*.jpg (subsampled_jpegs): 4:4:0, 4:1:1 and 4:1:0 JPEGs
and JPEGs that store RGB, through the system's libjpeg;
and png*_49x31.png (variant_pngs): the PNG kinds Go's encoder
cannot write (16-bit gray, gray+alpha, tRNS, Adam7, gAMA, iCCP), through Pillow and the system's libpng
(libpng-dev); pngshortplte*.png (short_palette_pngs): palette PNGs whose pixels use entries past the PLTE's;
orient*.png and orient*.jpg (oriented_images): images with an EXIF Orientation tag; gif_49x31.gif and
giftrns_49x31.gif (pillow_gifs): Pillow's GIFs, one with a transparent index (gifoffset and giflocal, first frames
smaller than the screen, one with its own colour table, are drawn by draw_test.go); EDGE_GIFS (edge_gifs): GIFs
written by hand that image/gif refuses and Pillow opens.

Every image's pixel_values are ViTImageProcessor's on the file as Pillow opens it and the HF loaders turn it upright
(ImageOps.exif_transpose: datasets' Image feature since 2.19, transformers' load_image), with do_convert_rgb=True
(transformers' convert_to_rgb: Image.convert("RGB") for any mode but RGB); the script checks that they equal those of
the image converted beforehand. (Without do_convert_rgb, which the published configs leave unset, transformers 4.51
refuses every mode but RGB: L, P and I images have no channel axis, LA, RGBA and CMYK four or two channels.)

reference.safetensors holds, for every image NAME:
  decoded/NAME               uint8 [H][W][3]   ImageOps.exif_transpose(PIL.Image.open(NAME)).convert("RGB"), as a
                                               dataset loader hands it over (datasets' Image feature since 2.19)
  pixel_values/CONFIG/NAME   float32 [3][h][w] ViTImageProcessor.from_json_file(CONFIG.json)(that image)
                             (for vit-in21k, only the IN21K_IMAGES; none for the NO_PIXEL_VALUES)
and resized/NAME/WxH, uint8 [H][W][3]: Image.resize((W, H), Image.BILINEAR) of two decoded PNGs at assorted sizes.
"""
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import numpy as np
import PIL
from PIL import Image, ImageChops, ImageCms, ImageOps
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
# NARROW_JPEGS: name -> Pillow's subsampling (2: 4:2:0, 1: 4:2:2). libjpeg-turbo upsamples a chroma plane of at most
# 2 columns (an image of at most 4 pixels across) by repeating its samples, a wider one with its triangle filters;
# 5 pixels across (3 chroma columns) is the first filtered width. 9 rows: an odd number, and not 1 or 3, which
# transformers would take for a channels-first image's channel axis.
NARROW_JPEGS = {"narrow420_1x9.jpg": 2, "narrow420_2x9.jpg": 2, "narrow420_4x9.jpg": 2, "narrow420_5x9.jpg": 2,
                "narrow422_4x9.jpg": 1}
# ORIENTED: name -> (EXIF Orientation, its TIFF byte order, its type: 3 SHORT, 4 LONG). The HF loaders (datasets'
# Image feature since 2.19, transformers' load_image) turn an image upright by this tag (ImageOps.exif_transpose)
# before ViTImageProcessor sees it; Image.open alone does not. Every orientation, in a PNG's eXIf chunk (lossless),
# and in JPEGs' APP1 in both byte orders and as a LONG; 9 is no orientation (exif_transpose leaves the image).
ORIENTED = {"orient%d_13x7.png" % o: (o, "<", 3) for o in range(2, 10)}
ORIENTED.update({"orient6be_13x7.jpg": (6, ">", 3), "orient5long_13x7.jpg": (5, "<", 4)})
# EDGE_GIFS: GIFs written by hand that image/gif refuses and Pillow opens (edge_gifs).
EDGE_GIFS = ["gifpast_14x10.gif", "gifnoscreen_5x4.gif", "gifshort_8x6.gif", "giflocalshort_12x9.gif",
             "gifnotable_8x6.gif", "gifextra_12x9.gif"]
# Their decoded samples are kept; their pixel values for one of each only (123 kB each at 128×80).
NO_PIXEL_VALUES = (set(NARROW_JPEGS) | set(ORIENTED) | set(EDGE_GIFS) |
                   {"pngshortplte4_16x9.png", "pngshortplte8_16x9.png", "sub440_13x5.jpg", "sub411_7x9.jpg"}) - {
    "narrow420_4x9.jpg", "orient6be_13x7.jpg", "orient8_13x7.png", "gifpast_14x10.gif"}


def compile_tool(tmp, source, lib):
    """Compiles scripts/SOURCE against the system's LIB into tmp and returns the executable's path."""
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(tmp, os.path.splitext(source)[0])
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(here, source), "-l" + lib], check=True)
    return exe


def pillow_jpegs(out):
    """Writes JPEGs of the kinds image/jpeg cannot write, with Pillow (libjpeg-turbo), so that the decoder is checked
    on each: 4:4:4 and 4:2:2 chroma, progressive scans (colour and gray), an image of saturated stripes at low
    quality, whose ringing takes the inverse DCT's outputs past 0 and 255 (the range limit), CMYK with subsampled
    components, and the NARROW_JPEGS; and YCCK ones through the system's libjpeg."""
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
    ycck_jpeg(np.asarray(scene), os.path.join(out, "ycckk420_97x61.jpg"), sampling="2x2")  # K subsampled too
    for name, subsampling in (("pilcmyk420_97x61.jpg", 2), ("pilcmyk422_97x61.jpg", 1)):  # C at 2x2 or 2x1, M, Y and K 1x1
        scene.convert("CMYK").save(os.path.join(out, name), quality=85, subsampling=subsampling)
    for name, subsampling in NARROW_JPEGS.items():  # columns of the scene whose colours change along them
        w = int(name.split("_")[1].split("x")[0])
        scene.crop((40, 20, 40 + w, 29)).save(os.path.join(out, name), quality=90, subsampling=subsampling)


def ycck_jpeg(rgb, path, sampling="-"):
    """Writes a YCCK JPEG (Adobe transform 2, as Photoshop saves CMYK) of rgb with a black ramp, through the system's
    libjpeg (scripts/make_test_jpeg.c: Pillow writes CMYK JPEGs untransformed): libjpeg's sampling (Y and K 2x2), or
    Y at SAMPLING and the others, K included, 1x1."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_tool(tmp, "make_test_jpeg.c", "jpeg")
        h, w, _ = rgb.shape
        y, x = np.mgrid[0:h, 0:w]
        k = (x * 3 + y * 5) % 97
        cmyk = np.stack([255 - rgb[..., 0], 255 - rgb[..., 1], 255 - rgb[..., 2], k], -1).astype(np.uint8)
        args = [exe, str(w), str(h), "cmyk", "80", sampling, "0", "baseline"]
        jpeg = subprocess.run(args, input=cmyk.tobytes(), capture_output=True, check=True).stdout
    with open(path, "wb") as f:
        f.write(jpeg)


# RESTART_JPEGS: name -> (components, quality, luma sampling, restart interval in MCUs or "Nr" in MCU rows, scans).
# 97×61 is no whole number of MCUs either way (7×4 MCUs of 16×16 at 4:2:0, 7×8 at 4:2:2, 13×8 at 4:4:4 and in gray),
# and the intervals in MCUs (3, 5, 7) do not divide a row of them, so most restarts fall mid-row. A progressive JPEG's
# AC scans and a JPEG written one scan a component are non-interleaved: their MCU is one block (13×8 luma blocks,
# 7×4 chroma at 4:2:0), and the restart interval counts those; libjpeg writes a new DRI for each scan of the
# progressive one with its interval in rows.
RESTART_JPEGS = {
    "rst420_97x61.jpg": (3, 80, "2x2", "3", "baseline"),
    "rst420rows_97x61.jpg": (3, 70, "2x2", "1r", "baseline"),
    "rst422_97x61.jpg": (3, 75, "2x1", "5", "baseline"),
    "rst444_97x61.jpg": (3, 85, "1x1", "2r", "baseline"),
    "rstgray_97x61.jpg": (1, 75, "-", "7", "baseline"),
    "rstscans_97x61.jpg": (3, 80, "2x2", "4", "components"),
    "rstprog_97x61.jpg": (3, 60, "2x2", "2", "progressive"),
    "rstprogrows_97x61.jpg": (3, 60, "2x2", "1r", "progressive"),
}


def exif_orientation(value, order, kind):
    """An APP1/eXIf payload ("Exif\\0\\0" and a TIFF structure) whose IFD0 holds one entry: Orientation = value, of
    TIFF type kind (3 SHORT, 4 LONG), in byte order order ("<" II, ">" MM)."""
    entry = struct.pack(order + "HHI", 0x0112, kind, 1) + struct.pack(order + ("HH" if kind == 3 else "I"), *(
        (value, 0) if kind == 3 else (value,)))
    head = (b"II*\x00" if order == "<" else b"MM\x00*") + struct.pack(order + "I", 8)
    return b"Exif\x00\x00" + head + struct.pack(order + "H", 1) + entry + struct.pack(order + "I", 0)


def short_palette_pngs(out):
    """Writes pngshortplte*_16x9.png: palette PNGs (8 and 4 bits) whose pixels use entries 0–15 of a 4-entry PLTE (an
    error by the PNG specification, which Pillow reads with its default palette, gray i at entry i), by hand: Pillow
    writes every entry a palette image uses."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    w, h = 16, 9
    index = [[(x * 3 + y * 5) % 16 for x in range(w)] for y in range(h)]
    for depth in (8, 4):
        if depth == 8:
            rows = [bytes(r) for r in index]
        else:
            rows = [bytes(r[x] << 4 | r[x + 1] for x in range(0, w, 2)) for r in index]
        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 3, 0, 0, 0))
        png += chunk(b"PLTE", bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30]))
        png += chunk(b"IDAT", zlib.compress(b"".join(b"\x00" + r for r in rows))) + chunk(b"IEND", b"")
        name = "pngshortplte%d_16x9.png" % depth
        with open(os.path.join(out, name), "wb") as f:
            f.write(png)
        assert np.asarray(Image.open(os.path.join(out, name)).convert("RGB"))[0, 5].tolist() == [15, 15, 15], name


def pillow_gifs(out):
    """Writes gif_49x31.gif and giftrns_49x31.gif: every other pixel of scene_97x61.png quantized to 16 colours and
    saved by Pillow (interlaced, as Pillow writes a GIF of 16 rows or more), the second with a transparent index
    whose colour is not black (Image.convert("RGB") shows the colour; image/gif makes the entry transparent black)."""
    scene = Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB").resize((49, 31), Image.NEAREST)
    p = scene.quantize(colors=16, method=Image.Quantize.MEDIANCUT)
    p.save(os.path.join(out, "gif_49x31.gif"))
    trns = max(range(16), key=lambda i: sum(p.getpalette()[3 * i:3 * i + 3]))  # the brightest entry
    p.save(os.path.join(out, "giftrns_49x31.gif"), transparency=trns)
    back = Image.open(os.path.join(out, "giftrns_49x31.gif"))
    assert back.mode == "P" and back.info.get("transparency") == trns, back.info
    assert sum(back.getpalette()[3 * trns:3 * trns + 3]) > 0


def gif_lzw(pixels, lit_width=8):
    """A GIF's image data (its code size, then sub-blocks) coding pixels without compression: a clear code every
    2**lit_width - 3 literals keeps the codes lit_width + 1 bits wide."""
    clear, width, per = 1 << lit_width, lit_width + 1, (1 << lit_width) - 3
    codes = []
    for i in range(0, len(pixels), per):
        codes += [clear] + pixels[i:i + per]
    codes.append(clear + 1)  # end of information
    acc = nbits = 0
    data = bytearray()
    for c in codes:
        acc, nbits = acc | c << nbits, nbits + width
        while nbits >= 8:
            data.append(acc & 255)
            acc, nbits = acc >> 8, nbits - 8
    if nbits:
        data.append(acc)
    blocks = bytearray([lit_width])
    for i in range(0, len(data), 255):
        blocks += bytes([len(data[i:i + 255])]) + data[i:i + 255]
    return bytes(blocks) + b"\0"


def gif_file(screen, table, body, version=b"GIF89a"):
    """A GIF: the header, a screen of size screen with the global colour table table (None: none), then body and
    the trailer. A table's size is a power of 2 from 2 to 256 entries."""
    flags = 0x80 | (len(table) // 3).bit_length() - 2 if table is not None else 0
    return version + struct.pack("<HHBBB", screen[0], screen[1], flags, 0, 0) + (table or b"") + body + b";"


def gif_control(trns=None):
    """A graphic control extension: transparent index trns, or none."""
    return b"\x21\xf9\x04" + bytes([trns is not None, 0, 0, trns or 0]) + b"\0"


def gif_frame(x, y, w, h, pixels, table=None, extra=()):
    """An image descriptor at (x, y) of w×h with its own colour table (when given), and its data coding pixels and
    then the extra pixels."""
    flags = 0x80 | (len(table) // 3).bit_length() - 2 if table is not None else 0
    return b"," + struct.pack("<HHHHB", x, y, w, h, flags) + (table or b"") + gif_lzw(list(pixels) + list(extra))


def edge_gifs(out):
    """Writes EDGE_GIFS: GIFs that image/gif refuses and Pillow opens, written by hand (uncompressed LZW): a first
    frame past the screen, a 0×0 screen, pixels and a transparent index past a short global or local table, no
    colour table at all, and data past the frame's last pixel after a stray byte and two graphic control extensions
    (the second, without a transparent index, leaves the first's in place in Pillow)."""
    def table(n, seed):
        return bytes((i * 37 + seed * 11) % 256 if c == 0 else (i * 91 + seed * 5 + 40) % 256 if c == 1 else
                     (i * 13 + seed * 200) % 256 for i in range(n) for c in range(3))

    def pix(w, h, mod=256):
        return [(i * 7) % mod for i in range(w * h)]

    files = {
        "gifpast_14x10.gif": gif_file((10, 10), table(256, 1), gif_frame(4, 0, 10, 5, pix(10, 5))),
        "gifnoscreen_5x4.gif": gif_file((0, 0), table(256, 2), gif_frame(0, 0, 5, 4, pix(5, 4))),
        "gifshort_8x6.gif": gif_file((8, 6), table(4, 3), gif_frame(0, 0, 8, 6, pix(8, 6)), version=b"GIF87a"),
        "giflocalshort_12x9.gif": gif_file((12, 9), table(256, 4),
                                           gif_control(200) + gif_frame(2, 2, 5, 4, pix(5, 4), table(2, 5))),
        "gifnotable_8x6.gif": gif_file((8, 6), None, gif_frame(2, 1, 4, 3, pix(4, 3))),
        "gifextra_12x9.gif": gif_file((12, 9), table(256, 6), b"\0" + gif_control(9) + gif_control()
                                      + gif_frame(3, 2, 5, 4, pix(5, 4), extra=[1, 2, 3])),
    }
    assert sorted(files) == sorted(EDGE_GIFS)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        img = Image.open(os.path.join(out, name))
        mode = "L" if "notable" in name else "P"
        assert "%dx%d" % img.size in name and img.mode == mode, (name, img.size, img.mode)
    assert Image.open(os.path.join(out, "gifextra_12x9.gif")).info["transparency"] == 9


def oriented_images(out):
    """Writes ORIENTED: a 13×7 corner of scene_97x61.png (asymmetric, so that every transposition shows) with an EXIF
    Orientation, and checks that Pillow reads the tag as written."""
    scene = Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB").crop((30, 10, 43, 17))
    for name, (value, order, kind) in ORIENTED.items():
        path = os.path.join(out, name)
        scene.save(path, exif=exif_orientation(value, order, kind), **({"quality": 90} if name.endswith(".jpg") else {}))
        assert Image.open(path).getexif().get(0x0112) == value, name


def restart_jpegs(out):
    """Writes RESTART_JPEGS from scene_97x61.png through the system's libjpeg (scripts/make_test_jpeg.c: Pillow 9.4
    cannot set a restart interval), and checks that each has a DRI segment and restart markers."""
    scene = Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB")
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_tool(tmp, "make_test_jpeg.c", "jpeg")
        for name, (n, quality, sampling, restart, scans) in RESTART_JPEGS.items():
            px = scene if n == 3 else scene.convert("L")
            kind = "rgb" if n == 3 else "gray"
            args = [exe, str(px.width), str(px.height), kind, str(quality), sampling, restart, scans]
            jpeg = subprocess.run(args, input=px.tobytes(), capture_output=True, check=True).stdout
            assert b"\xff\xdd\x00\x04" in jpeg and b"\xff\xd0" in jpeg, name  # a DRI segment and RST0
            with open(os.path.join(out, name), "wb") as f:
                f.write(jpeg)


def shuffled_srgb_profile():
    """An ICC profile of lcms's sRGB with its red and blue primaries swapped, and a fixed creation date (so that the
    file is reproducible): a colour-managed reader would swap red and blue, so a reader that applied it would show."""
    icc = bytearray(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    icc[24:36] = bytes([0x07, 0xe8, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0])  # 2024-01-01 00:00:00
    tags = {}
    for i in range(int.from_bytes(icc[128:132], "big")):
        sig, off, size = icc[132 + 12 * i:136 + 12 * i], *(int.from_bytes(icc[136 + 12 * i + k:140 + 12 * i + k], "big") for k in (0, 4))
        tags[bytes(sig)] = (off, size)
    (r, rn), (b, bn) = tags[b"rXYZ"], tags[b"bXYZ"]
    assert rn == bn == 20, (rn, bn)
    icc[r:r + 20], icc[b:b + 20] = icc[b:b + 20], icc[r:r + 20]
    return bytes(icc)


def variant_pngs(out):
    """Writes the PNG kinds image/png's encoder cannot write, from every other pixel of scene_97x61.png (49×31: no
    whole number of Adam7's 8×8 tiles), with Pillow and the system's libpng (scripts/make_test_png.c). Their 16-bit
    samples have the 8-bit sample as high byte and a ramp as low byte, so that a reader that rounded instead of
    taking the high byte (as Pillow does) would show; the 16-bit gray ones run from 0 to 699, so that Pillow's
    mode I clipping at 255 shows. Checks that Pillow opens each as the mode and with the chunks it is meant to have."""
    rgb = np.asarray(Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB"))[::2, ::2]
    h, w, _ = rgb.shape
    y, x = np.mgrid[0:h, 0:w]
    gray = np.asarray(Image.fromarray(rgb).convert("L"))
    alpha = ((x * 5 + y * 7) % 256).astype(np.uint8)
    gray16 = ((x * y * 7 + x) % 700).astype(np.uint16)

    def wide(a):  # 8-bit samples as 16-bit ones: a as the high byte, a ramp as the low
        low = ((x * 37 + y * 11) % 256).astype(np.uint16)
        return (a.astype(np.uint16) << 8) | (low[..., None] if a.ndim == 3 else low)

    def path(name):
        return os.path.join(out, name + "_49x31.png")

    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_tool(tmp, "make_test_png.c", "png")

        def libpng(name, samples, colour, depth, interlace=0, gamma=0, trns=-1):
            data = samples.astype(">u2" if depth == 16 else np.uint8).tobytes()
            args = [exe, str(w), str(h), str(colour), str(depth), str(interlace), str(gamma), str(trns)]
            with open(path(name), "wb") as f:
                f.write(subprocess.run(args, input=data, capture_output=True, check=True).stdout)

        Image.fromarray(gray16, "I;16").save(path("png16gray"))
        libpng("png16graytrns", gray16, 0, 16, trns=int(gray16[3, 5]))
        libpng("png16rgb", wide(rgb), 2, 16)
        libpng("png16rgba", np.dstack([wide(rgb), wide(alpha)]), 6, 16)
        Image.fromarray(np.dstack([gray, alpha]), "LA").save(path("pngla"))
        libpng("png16la", np.dstack([wide(gray), wide(alpha)]), 4, 16)
        pal = Image.fromarray(((x // 5 + y // 3) % 6).astype(np.uint8), "P")
        pal.putpalette([255, 0, 0, 0, 128, 255, 20, 200, 90, 250, 250, 10, 9, 9, 9, 200, 100, 50])
        pal.save(path("pngpaltrns"), transparency=bytes([255, 0, 128, 10, 200]))  # the sixth colour opaque
        libpng("pngadam7", rgb, 2, 8, interlace=1)
        libpng("png16adam7", np.dstack([wide(rgb), wide(alpha)]), 6, 16, interlace=1)
        libpng("pnggama", rgb, 2, 8, gamma=100000)  # gamma 1.0: linear samples, far from sRGB's
        icc = shuffled_srgb_profile()
        Image.fromarray(rgb).save(path("pngiccp"), icc_profile=icc)

    scene = Image.fromarray(rgb)
    managed = ImageCms.profileToProfile(scene, ImageCms.ImageCmsProfile(io.BytesIO(icc)), ImageCms.createProfile("sRGB"))
    assert ImageChops.difference(managed, scene).getbbox() is not None, "the ICC profile changes nothing"
    for name, mode, chunks in [("png16gray", "I", []), ("png16graytrns", "I", [b"tRNS"]), ("png16rgb", "RGB", []),
                               ("png16rgba", "RGBA", []), ("pngla", "LA", []), ("png16la", "RGBA", []),
                               ("pngpaltrns", "P", [b"tRNS"]), ("pngadam7", "RGB", []), ("png16adam7", "RGBA", []),
                               ("pnggama", "RGB", [b"gAMA"]), ("pngiccp", "RGB", [b"iCCP"])]:
        img = Image.open(path(name))
        with open(path(name), "rb") as f:
            data = f.read()
        depth, colour, interlace = data[24], data[25], data[28]
        assert img.mode == mode and all(c in data for c in chunks), (name, img.mode)
        assert interlace == ("adam7" in name) and (depth == 16) == ("16" in name), (name, depth, interlace)
        print(name, "colour type", colour, "depth", depth, "mode", img.mode, file=sys.stderr)


# SUBSAMPLED_JPEGS: name -> luma sampling (chroma 1x1): the subsamplings Pillow 9.4 does not write. libjpeg-turbo
# upsamples 4:4:0's chroma with its h1v2 triangle filter whatever the size, and 4:1:1's and 4:1:0's by repeating each
# sample (int_upsample). 97×61 is no whole number of MCUs (8×32, 32×8 and 32×16 pixels); 13×5 has 3 chroma rows at
# 4:4:0, 7×9 2 chroma columns at 4:1:1.
SUBSAMPLED_JPEGS = {"sub440_97x61.jpg": "1x2", "sub411_97x61.jpg": "4x1", "sub410_97x61.jpg": "4x2",
                    "sub440_13x5.jpg": "1x2", "sub411_7x9.jpg": "4x1"}
# JPEGs that store R, G and B, not YCbCr (the kind and the first component's sampling, as make_test_jpeg.c takes
# them): libjpeg upsamples a subsampled G and B as it does chroma (its fancy filters), and converts nothing; it tells
# RGB by an Adobe segment of transform 0 or, without one, by the component names 'R', 'G', 'B'; an Adobe segment of
# transform 1 says YCbCr whatever the names (yccrgbids). 2×9 has 1 G column at 4:2:0 (no fancy filter).
STORED_RGB_JPEGS = {"rgbstored420_97x61.jpg": ("rgb-stored", "2x2"), "rgbstored422_97x61.jpg": ("rgb-stored", "2x1"),
                    "rgbstored444_97x61.jpg": ("rgb-stored", "1x1"), "rgbstored440_13x5.jpg": ("rgb-stored", "1x2"),
                    "rgbstored420_2x9.jpg": ("rgb-stored", "2x2"), "rgbids420_97x61.jpg": ("rgb-ids", "2x2"),
                    "yccrgbids420_97x61.jpg": ("ycc-rgb-ids", "2x2")}
# The decoder's variants above keep their decoded samples, and their pixel values (the resize and normalisation of an
# RGB image, which the other files check) for one of each kind only: 123 kB each, and the tree and the GPU kit share
# the device tool's 64 MiB.
NO_PIXEL_VALUES |= ((set(RESTART_JPEGS) - {"rst420_97x61.jpg"}) | (set(SUBSAMPLED_JPEGS) - {"sub440_97x61.jpg"}) |
                    (set(STORED_RGB_JPEGS) - {"rgbstored420_97x61.jpg"}))


def subsampled_jpegs(out):
    """Writes SUBSAMPLED_JPEGS and STORED_RGB_JPEGS of scene_97x61.png (the small ones: crops where its colours
    change) through the system's libjpeg (scripts/make_test_jpeg.c)."""
    scene = Image.open(os.path.join(out, "scene_97x61.png")).convert("RGB")
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_tool(tmp, "make_test_jpeg.c", "jpeg")
        kinds = {name: ("rgb", sampling) for name, sampling in SUBSAMPLED_JPEGS.items()} | STORED_RGB_JPEGS
        for name, (kind, sampling) in kinds.items():
            w, h = (int(v) for v in name[:-4].split("_")[1].split("x"))
            px = scene if (w, h) == scene.size else scene.crop((40, 20, 40 + w, 20 + h))
            args = [exe, str(w), str(h), kind, "85", sampling, "0", "baseline"]
            jpeg = subprocess.run(args, input=px.tobytes(), capture_output=True, check=True).stdout
            with open(os.path.join(out, name), "wb") as f:
                f.write(jpeg)


def open_upright(out, name):
    """The image as the HF loaders hand it over: opened by Pillow and turned upright by its EXIF Orientation."""
    return ImageOps.exif_transpose(Image.open(os.path.join(out, name)))


def main(out):
    assert PIL.__version__ == "9.4.0", PIL.__version__
    Image.open(os.path.join(out, "scene_300x200.png")).convert("CMYK").save(
        os.path.join(out, "cmyk_300x200.jpg"), quality=90)
    pillow_jpegs(out)
    restart_jpegs(out)
    subsampled_jpegs(out)
    variant_pngs(out)
    short_palette_pngs(out)
    oriented_images(out)
    pillow_gifs(out)
    edge_gifs(out)
    names = sorted(n for n in os.listdir(out) if n.endswith((".png", ".jpg", ".gif")))
    tensors = {}
    for cname, cfg in CONFIGS.items():
        path = os.path.join(out, cname + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
        proc = ViTImageProcessor.from_json_file(path)
        for name in names:
            if cname == "vit-in21k" and name not in IN21K_IMAGES or name in NO_PIXEL_VALUES:
                continue
            pv = proc(open_upright(out, name), do_convert_rgb=True, return_tensors="np")["pixel_values"][0]
            converted = proc(open_upright(out, name).convert("RGB"), return_tensors="np")["pixel_values"][0]
            assert pv.dtype == np.float32 and np.array_equal(pv.view(np.uint32), converted.view(np.uint32)), name
            tensors["pixel_values/%s/%s" % (cname, name)] = np.ascontiguousarray(pv)
    for name in names:
        img = open_upright(out, name)
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
