/* Writes a YCCK JPEG (Adobe transform 2: the colour space Photoshop's CMYK
 * JPEGs use, which Pillow cannot write) with the system's libjpeg, for
 * imageproc's decoder checks (scripts/make_vit_image_fixtures.py runs it).
 *
 *   cc -O2 -o make_ycck_jpeg scripts/make_ycck_jpeg.c -ljpeg
 *   make_ycck_jpeg WIDTH HEIGHT QUALITY < pixels.cmyk > out.jpg
 *
 * The input is WIDTH x HEIGHT pixels of 4 bytes (C, M, Y, K), row by row, as
 * libjpeg takes JCS_CMYK; libjpeg converts them to YCCK and writes the Adobe
 * marker, with its default sampling for YCCK (Y and K full, Cb and Cr 2x2). */
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s WIDTH HEIGHT QUALITY < pixels.cmyk > out.jpg\n", argv[0]);
		return 2;
	}
	int w = atoi(argv[1]), h = atoi(argv[2]), q = atoi(argv[3]);
	if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || q < 1 || q > 100) {
		fprintf(stderr, "%s: bad size or quality\n", argv[0]);
		return 2;
	}
	unsigned char *px = malloc((size_t)w * h * 4);
	if (px == NULL || fread(px, 4, (size_t)w * h, stdin) != (size_t)w * h) {
		fprintf(stderr, "%s: want %d bytes of CMYK pixels on stdin\n", argv[0], w * h * 4);
		return 1;
	}
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr err;
	c.err = jpeg_std_error(&err);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, stdout);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 4;
	c.in_color_space = JCS_CMYK;
	jpeg_set_defaults(&c);
	jpeg_set_colorspace(&c, JCS_YCCK);
	jpeg_set_quality(&c, q, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = px + (size_t)c.next_scanline * w * 4;
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(px);
	return 0;
}
