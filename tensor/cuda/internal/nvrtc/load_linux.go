package nvrtc

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// NVRTC is opened by its Linux names with dlopen(3), through purego;
// load_other.go stands in for this file elsewhere.

func dlopenFirst(names []string, mode int) (uintptr, error) {
	var errs []string
	for _, n := range names {
		h, err := purego.Dlopen(n, mode)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err.Error())
	}
	return 0, fmt.Errorf("cannot load %s: %v", names[0], errs)
}

// load opens NVRTC, its builtins library first, binds its entry points and
// checks that it is the pinned version.
func load() (*nvrtc, error) {
	hint := Hint
	if _, err := dlopenFirst(builtinsLib, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return nil, fmt.Errorf("%w; %s", err, hint)
	}
	lib, err := dlopenFirst(nvrtcLib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, hint)
	}
	nv := &nvrtc{}
	for name, fn := range map[string]any{
		"nvrtcVersion": &nv.version, "nvrtcCreateProgram": &nv.createProgram, "nvrtcCompileProgram": &nv.compileProgram,
		"nvrtcGetProgramLogSize": &nv.getLogSize, "nvrtcGetProgramLog": &nv.getLog, "nvrtcGetPTXSize": &nv.getPTXSize,
		"nvrtcGetPTX": &nv.getPTX, "nvrtcDestroyProgram": &nv.destroyProgram, "nvrtcGetErrorString": &nv.getErrorString,
	} {
		if _, err := purego.Dlsym(lib, name); err != nil {
			return nil, fmt.Errorf("NVRTC has no %s: %w", name, err)
		}
		purego.RegisterLibFunc(fn, lib, name)
	}
	var major, minor int32
	if rc := nv.version(&major, &minor); rc != 0 {
		return nil, fmt.Errorf("nvrtcVersion: %s", nv.getErrorString(rc))
	}
	if major != WantMajor || minor != WantMinor {
		return nil, fmt.Errorf("NVRTC %d.%d found; the committed PTX is made with %d.%d (other versions make other PTX); %s", major, minor, WantMajor, WantMinor, hint)
	}
	return nv, nil
}
