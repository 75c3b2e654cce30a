package cuda

import (
	"reflect"
	"testing"

	"github.com/ebitengine/purego"
)

// TestSignaturesBind registers every driver and cuBLAS entry point's Go
// signature with purego at a dummy address (nothing is called): purego
// refuses, with a panic at load time on a GPU machine, a signature it cannot
// pass (more than 15 arguments, float arguments beyond its registers), and
// this finds that on machines without a GPU.
func TestSignaturesBind(t *testing.T) {
	for _, v := range []any{&driver{}, &cublas{}} {
		s := reflect.ValueOf(v).Elem()
		for i := range s.NumField() {
			f := s.Field(i)
			if f.Kind() != reflect.Func {
				continue
			}
			name := s.Type().Name() + "." + s.Type().Field(i).Name
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: purego refuses its signature %s: %v", name, f.Type(), r)
					}
				}()
				fn := reflect.New(f.Type())
				purego.RegisterFunc(fn.Interface(), 1)
			}()
		}
	}
}
