// Package peftweights opens the weights of a PEFT adapter directory (LoRA's
// and prompt tuning's alike): adapter_model.safetensors, the file PEFT's
// save_pretrained writes by default. Its pickle alternative is refused with
// the way out, not reported as a missing file.
package peftweights

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/safetensors"
)

// File is the weights file's name in an adapter directory.
const File = "adapter_model.safetensors"

// pickle is what PEFT writes instead with safe_serialization=False.
const pickle = "adapter_model.bin"

// Open opens dir's adapter_model.safetensors. Where it is missing and PEFT's
// adapter_model.bin is there, the error says so and how to save the adapter
// in the format read here.
func Open(dir string) (*safetensors.File, error) {
	path := filepath.Join(dir, File)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, pickle)); err == nil {
			return nil, fmt.Errorf("adapter %s: its weights are %s (PyTorch's pickle, what PEFT's save_pretrained writes with safe_serialization=False), which meazo-go does not read: save the adapter again with safe_serialization=True (PEFT's default) to get %s", dir, pickle, File)
		}
	}
	return safetensors.Open(path)
}
