package tensor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Options are the settings a backend is opened with. A backend ignores the
// ones that do not apply to it.
type Options struct {
	// Threads is the number of worker goroutines of the CPU backend
	// (0: runtime.GOMAXPROCS(0)).
	Threads int
	// Device is the GPU ordinal of a GPU backend (0: the first visible one).
	Device int
}

// Opener makes a backend, or says in one line why it cannot (a missing
// driver library, no device, …).
type Opener func(Options) (Backend, error)

type registered struct {
	name     string
	priority int
	open     Opener
}

var (
	registryMu sync.Mutex
	registry   []registered
)

// Register makes a backend available to Open under name. Backends register
// themselves in an init function, so a program has the backends whose
// packages it imports (package tensor/backends imports all of them). "auto"
// tries the registered backends from the highest priority down.
func Register(name string, priority int, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || name == "auto" || slices.ContainsFunc(registry, func(r registered) bool { return r.name == name }) {
		panic(fmt.Sprintf("tensor: backend %q registered twice or reserved", name))
	}
	registry = append(registry, registered{name, priority, open})
	slices.SortStableFunc(registry, func(a, b registered) int { return b.priority - a.priority })
}

// Names lists the registered backends in the order "auto" tries them.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for _, r := range registry {
		names = append(names, r.name)
	}
	return names
}

// Open returns the backend registered as name. "auto" (or "") opens the
// first registered backend that opens, in priority order, and reports in
// skipped why each one before it could not be used; for any other name
// skipped is nil.
func Open(name string, o Options) (b Backend, skipped []error, err error) {
	registryMu.Lock()
	regs := slices.Clone(registry)
	registryMu.Unlock()
	if name == "" || name == "auto" {
		for _, r := range regs {
			b, err := r.open(o)
			if err == nil {
				return b, skipped, nil
			}
			skipped = append(skipped, named(r.name, err))
		}
		return nil, nil, fmt.Errorf("no backend could be opened: %w", errors.Join(skipped...))
	}
	for _, r := range regs {
		if r.name == name {
			b, err := r.open(o)
			if err != nil {
				return nil, nil, named(name, err)
			}
			return b, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("unknown backend %q (have auto, %s)", name, strings.Join(Names(), ", "))
}

// named prefixes err with the backend's name unless it already starts so.
func named(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
