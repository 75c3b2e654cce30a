/* Writes a JPEG with restart markers (a DRI segment and RSTn markers in the
 * entropy-coded data) with the system's libjpeg, for imageproc's decoder
 * checks (scripts/make_vit_image_fixtures.py runs it): Pillow 9.4 cannot
 * set a restart interval.
 *
 *   cc -O2 -o make_restart_jpeg scripts/make_restart_jpeg.c -ljpeg
 *   make_restart_jpeg WIDTH HEIGHT COMPONENTS QUALITY SAMPLING RESTART SCANS < pixels > out.jpg
 *
 * The input is WIDTH x HEIGHT pixels of COMPONENTS bytes (3: R, G, B, which
 * libjpeg converts to YCbCr; 1: gray), row by row. SAMPLING is the luma's
 * sampling factors, HxV (2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4; chroma is
 * 1x1). RESTART is the interval in MCUs ("5") or in MCU rows ("2r"), as
 * cjpeg's -restart takes it. SCANS is "baseline" (one interleaved scan),
 * "progressive" (libjpeg's standard progressive scans,
 * jpeg_simple_progression) or "components" (baseline, one scan of all 64
 * coefficients a component: non-interleaved scans, whose MCU is one block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

int main(int argc, char **argv) {
	if (argc != 8) {
		fprintf(stderr, "usage: %s WIDTH HEIGHT COMPONENTS QUALITY HxV RESTART[r] baseline|progressive|components < pixels > out.jpg\n", argv[0]);
		return 2;
	}
	int w = atoi(argv[1]), h = atoi(argv[2]), n = atoi(argv[3]), q = atoi(argv[4]);
	int hs = 0, vs = 0;
	const char *scans = argv[7];
	int restart = atoi(argv[6]), inRows = strchr(argv[6], 'r') != NULL;
	if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || (n != 1 && n != 3) || q < 1 || q > 100 ||
	    sscanf(argv[5], "%dx%d", &hs, &vs) != 2 || hs < 1 || hs > 2 || vs < 1 || vs > 2 ||
	    restart < 1 || restart > 65535 ||
	    (strcmp(scans, "baseline") != 0 && strcmp(scans, "progressive") != 0 && strcmp(scans, "components") != 0)) {
		fprintf(stderr, "%s: bad size, components, quality, sampling, restart interval or scans\n", argv[0]);
		return 2;
	}
	size_t size = (size_t)w * h * n;
	unsigned char *px = malloc(size);
	if (px == NULL || fread(px, 1, size, stdin) != size) {
		fprintf(stderr, "%s: want %zu bytes of pixels on stdin\n", argv[0], size);
		return 1;
	}
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr err;
	c.err = jpeg_std_error(&err);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, stdout);
	c.image_width = w;
	c.image_height = h;
	c.input_components = n;
	c.in_color_space = n == 3 ? JCS_RGB : JCS_GRAYSCALE;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, q, TRUE);
	c.comp_info[0].h_samp_factor = n == 3 ? hs : 1;
	c.comp_info[0].v_samp_factor = n == 3 ? vs : 1;
	if (inRows) {
		c.restart_in_rows = restart;
	} else {
		c.restart_interval = restart;
	}
	jpeg_scan_info perComponent[3];
	if (strcmp(scans, "progressive") == 0) {
		jpeg_simple_progression(&c);
	} else if (strcmp(scans, "components") == 0) {
		for (int i = 0; i < n; i++) {
			perComponent[i] = (jpeg_scan_info){.comps_in_scan = 1, .component_index = {i}, .Ss = 0, .Se = 63, .Ah = 0, .Al = 0};
		}
		c.scan_info = perComponent;
		c.num_scans = n;
	}
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = px + (size_t)c.next_scanline * w * n;
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(px);
	return 0;
}
