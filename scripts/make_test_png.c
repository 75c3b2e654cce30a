/* Writes a PNG of any colour type and bit depth of 8 or 16, optionally
 * Adam7-interlaced, with a gAMA chunk or a tRNS colour, with the system's
 * libpng, for imageproc's decoder checks (scripts/make_vit_image_fixtures.py
 * runs it): Pillow 9.4 writes no 16-bit colour, gray+alpha 16-bit or
 * interlaced PNG.
 *
 *   cc -O2 -o make_test_png scripts/make_test_png.c -lpng
 *   make_test_png WIDTH HEIGHT COLOUR DEPTH INTERLACE GAMMA TRNS < samples > out.png
 *
 * COLOUR is the PNG colour type (0 gray, 2 RGB, 4 gray+alpha, 6 RGBA),
 * DEPTH 8 or 16, INTERLACE 1 for Adam7 and 0 for none. GAMMA is the gAMA
 * chunk's image gamma in units of 1/100000 (45455 is 1/2.2), or 0 for no
 * chunk. TRNS is the sample value (gray, or the same value in R, G and B)
 * that a tRNS chunk makes transparent, or -1 for no chunk (colour types 0
 * and 2 only). The input is WIDTH x HEIGHT pixels of the colour type's
 * samples, row by row, each a byte at depth 8 or two bytes big-endian at
 * depth 16, as PNG stores them. */
#include <stdio.h>
#include <stdlib.h>
#include <png.h>

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: %s WIDTH HEIGHT COLOUR DEPTH INTERLACE GAMMA TRNS < samples > out.png\n", argv[0]);
		return 2;
	}
	int w = atoi(argv[1]), h = atoi(argv[2]), colour = atoi(argv[3]), depth = atoi(argv[4]);
	int interlace = atoi(argv[5]), gamma = atoi(argv[6]), trns = atoi(argv[7]);
	int channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 0;
	if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || channels == 0 || (depth != 8 && depth != 16) ||
	    gamma < 0 || trns < -1 || trns >= (1 << depth) || (trns >= 0 && colour != 0 && colour != 2)) {
		fprintf(stderr, "%s: bad size, colour type, depth, gamma or tRNS value\n", argv[0]);
		return 2;
	}
	size_t rowBytes = (size_t)w * channels * depth / 8;
	unsigned char *px = malloc(rowBytes * h);
	png_bytep *rows = malloc(sizeof(png_bytep) * h);
	if (px == NULL || rows == NULL || fread(px, 1, rowBytes * h, stdin) != rowBytes * h) {
		fprintf(stderr, "%s: want %zu bytes of samples on stdin\n", argv[0], rowBytes * h);
		return 1;
	}
	for (int y = 0; y < h; y++) {
		rows[y] = px + (size_t)y * rowBytes;
	}
	png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(p);
	if (p == NULL || info == NULL || setjmp(png_jmpbuf(p))) {
		fprintf(stderr, "%s: libpng failed\n", argv[0]);
		return 1;
	}
	png_init_io(p, stdout);
	png_set_IHDR(p, info, w, h, depth, colour, interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
	             PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (gamma > 0) {
		png_set_gAMA_fixed(p, info, gamma);
	}
	if (trns >= 0) {
		png_color_16 c = {0, (png_uint_16)trns, (png_uint_16)trns, (png_uint_16)trns, (png_uint_16)trns};
		png_set_tRNS(p, info, NULL, 0, &c);
	}
	png_set_rows(p, info, rows);
	png_write_png(p, info, PNG_TRANSFORM_IDENTITY, NULL);
	png_destroy_write_struct(&p, &info);
	free(rows);
	free(px);
	return 0;
}
