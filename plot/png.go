package plot

import (
	"errors"
	"fmt"
	"os/exec"
)

// ToPNG converts the SVG file svg to the PNG file png on a white background,
// with rsvg-convert or else ImageMagick's convert. The package draws no
// pixels itself (no fonts, no dependencies); documents and slides that want
// PNGs get them from a tool that renders SVG well.
func ToPNG(svg, png string) error {
	if p, err := exec.LookPath("rsvg-convert"); err == nil {
		if b, err := exec.Command(p, "-b", "white", "-o", png, svg).CombinedOutput(); err != nil {
			return fmt.Errorf("rsvg-convert %s: %v: %s", svg, err, b)
		}
		return nil
	}
	if p, err := exec.LookPath("convert"); err == nil {
		if b, err := exec.Command(p, "-background", "white", "-flatten", svg, png).CombinedOutput(); err != nil {
			return fmt.Errorf("convert %s: %v: %s", svg, err, b)
		}
		return nil
	}
	return errors.New("no PNGs: neither rsvg-convert (Debian: librsvg2-bin) nor ImageMagick's convert is on PATH")
}
