/* Writes the test JPEGs that neither image/jpeg nor Pillow 9.4 can write
 * with the system's libjpeg, for imageproc's decoder checks
 * (scripts/make_vit_image_fixtures.py runs it): YCCK (Adobe transform 2,
 * the colour space of Photoshop's CMYK JPEGs), JPEGs with restart markers
 * (a DRI segment and RSTn markers in the entropy-coded data), baseline,
 * progressive or one scan a component, the chroma subsamplings Pillow
 * does not offer (4:4:0, 4:1:1, 4:1:0), and JPEGs that store RGB, not
 * YCbCr (Pillow 9.4 always converts RGB to YCbCr).
 *
 *   cc -O2 -o make_test_jpeg scripts/make_test_jpeg.c -ljpeg
 *   make_test_jpeg WIDTH HEIGHT INPUT QUALITY SAMPLING RESTART SCANS < pixels > out.jpg
 *
 * INPUT is the pixels' kind: "rgb" (3 bytes a pixel, which libjpeg
 * converts to YCbCr), "gray" (1 byte) or "cmyk" (4 bytes, C, M, Y, K, which
 * libjpeg converts to YCCK and marks with an Adobe segment), WIDTH x HEIGHT
 * of them row by row; three more kinds take "rgb"'s pixels: "rgb-stored"
 * stores them as R, G and B, unconverted (libjpeg marks it with an Adobe
 * segment of transform 0 and names the components 'R', 'G', 'B'),
 * "rgb-ids" the same without the Adobe segment (a reader tells RGB by the
 * component names alone), and "ycc-rgb-ids" converts them to YCbCr with
 * an Adobe segment of transform 1 (YCbCr), no JFIF segment, and the
 * components named 'R', 'G', 'B' (libjpeg's readers believe the Adobe
 * segment). SAMPLING is the first component's sampling factors,
 * HxV (for "rgb" 2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4, 1x2 4:4:0, 4x1 4:1:1,
 * 4x2 4:1:0; the other components are 1x1: for "cmyk", K too), or "-" for
 * libjpeg's defaults (YCCK's: Y and K 2x2, Cb and Cr 1x1). RESTART is the
 * restart interval in MCUs ("5") or in MCU rows ("2r"), as cjpeg's -restart
 * takes it, or 0 for none. SCANS is "baseline" (one interleaved scan),
 * "progressive" (libjpeg's standard progressive scans,
 * jpeg_simple_progression) or "components" (one sequential scan of all 64
 * coefficients a component: non-interleaved scans, whose MCU is one
 * block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

static int usage(const char *prog) {
	fprintf(stderr, "usage: %s WIDTH HEIGHT rgb|rgb-stored|rgb-ids|ycc-rgb-ids|gray|cmyk QUALITY HxV|- RESTART[r] baseline|progressive|components < pixels > out.jpg\n", prog);
	return 2;
}

int main(int argc, char **argv) {
	if (argc != 8) {
		return usage(argv[0]);
	}
	int w = atoi(argv[1]), h = atoi(argv[2]), q = atoi(argv[4]);
	const char *input = argv[3], *sampling = argv[5], *scans = argv[7];
	int stored = strcmp(input, "rgb-stored") == 0 || strcmp(input, "rgb-ids") == 0, yccIDs = strcmp(input, "ycc-rgb-ids") == 0;
	int n = strcmp(input, "rgb") == 0 || stored || yccIDs ? 3 : strcmp(input, "gray") == 0 ? 1 : strcmp(input, "cmyk") == 0 ? 4 : 0;
	int hs = 0, vs = 0, keepSampling = strcmp(sampling, "-") == 0;
	int restart = atoi(argv[6]), inRows = strchr(argv[6], 'r') != NULL;
	if (w <= 0 || h <= 0 || w > 4096 || h > 4096 || n == 0 || q < 1 || q > 100 ||
	    (!keepSampling && (n == 1 || sscanf(sampling, "%dx%d", &hs, &vs) != 2 || (hs != 1 && hs != 2 && hs != 4) || vs < 1 || vs > 2)) ||
	    restart < 0 || restart > 65535 ||
	    (strcmp(scans, "baseline") != 0 && strcmp(scans, "progressive") != 0 && strcmp(scans, "components") != 0)) {
		return usage(argv[0]);
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
	c.in_color_space = n == 3 ? JCS_RGB : n == 1 ? JCS_GRAYSCALE : JCS_CMYK;
	jpeg_set_defaults(&c);
	if (n == 4) {
		jpeg_set_colorspace(&c, JCS_YCCK);
	}
	if (stored) {
		jpeg_set_colorspace(&c, JCS_RGB); /* writes the Adobe segment, transform 0, and IDs 'R', 'G', 'B' */
		c.write_Adobe_marker = strcmp(input, "rgb-stored") == 0;
	}
	if (yccIDs) {
		c.write_JFIF_header = FALSE;
		c.write_Adobe_marker = TRUE; /* transform 1 for YCbCr */
		c.comp_info[0].component_id = 'R';
		c.comp_info[1].component_id = 'G';
		c.comp_info[2].component_id = 'B';
	}
	jpeg_set_quality(&c, q, TRUE);
	if (!keepSampling) {
		c.comp_info[0].h_samp_factor = hs;
		c.comp_info[0].v_samp_factor = vs;
		for (int i = 1; i < c.num_components; i++) {
			c.comp_info[i].h_samp_factor = 1;
			c.comp_info[i].v_samp_factor = 1;
		}
	}
	if (inRows) {
		c.restart_in_rows = restart;
	} else {
		c.restart_interval = restart;
	}
	jpeg_scan_info perComponent[4];
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
