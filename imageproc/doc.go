// Package imageproc turns an image file into a vision model's pixel_values
// exactly as transformers' ViTImageProcessor does, as its checkpoint's
// preprocessor_config.json says: decode (PNG or JPEG, with the standard
// library), convert to RGB, resize with Pillow's BILINEAR filter, rescale to
// [0, 1] and normalise by the channel means and deviations, channels first.
//
// transformers resizes through Pillow, so this package reproduces Pillow's
// arithmetic rather than a textbook bilinear interpolation: Pillow's BILINEAR
// is an antialiased triangle filter whose support grows with the reduction,
// its weights are rounded to 22-bit fixed point, and the image is resized
// horizontally and then vertically with each pass rounded to uint8
// (resize.go). For PNG the pixel values are bit-identical to
// ViTImageProcessor's. For JPEG, Pillow decodes with libjpeg, which smooths
// the subsampled chroma planes when it upsamples them ("fancy upsampling");
// Go's image/jpeg repeats each chroma sample. jpeg.go redoes the upsampling
// and the colour conversion from the decoded planes as libjpeg does; what
// remains is the two libraries' inverse DCTs, measured in MODELS.md.
package imageproc
