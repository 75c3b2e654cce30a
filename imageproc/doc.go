// Package imageproc turns an image file into a vision model's pixel_values
// exactly as transformers' ViTImageProcessor does, as its checkpoint's
// preprocessor_config.json says: decode (PNG with the standard library, JPEG
// with internal/jpeg, a GIF's first frame as Pillow reads it: gif.go), turn upright by the EXIF orientation (as the HF
// loaders do before the processor sees the image), convert to RGB, resize with Pillow's BILINEAR filter,
// rescale to [0, 1] and normalise by the channel means and deviations,
// channels first.
//
// transformers resizes through Pillow, so this package reproduces Pillow's
// arithmetic rather than a textbook bilinear interpolation: Pillow's BILINEAR
// is an antialiased triangle filter whose support grows with the reduction,
// its weights are rounded to 22-bit fixed point, and the image is resized
// horizontally and then vertically with each pass rounded to uint8
// (resize.go). Pillow decodes JPEG with libjpeg, whose samples differ from
// the standard library's image/jpeg in two places: its inverse DCT (the
// accurate integer "islow"), and its upsampling of subsampled chroma, which
// smooths with a triangle filter ("fancy upsampling") where image/jpeg
// repeats each sample. internal/jpeg is image/jpeg with libjpeg's inverse
// DCT; jpeg.go upsamples and converts the colours from its planes as libjpeg
// does. The pixel values are bit-identical to ViTImageProcessor's (with
// do_convert_rgb) for PNG (8- and 16-bit, every colour type, tRNS, Adam7)
// and JPEG (baseline and progressive, with and without restart markers;
// 4:2:0, 4:2:2, 4:4:4, 4:4:0, 4:1:1, 4:1:0, gray, CMYK, YCCK).
package imageproc
