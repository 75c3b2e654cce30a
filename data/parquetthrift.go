package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// thriftScan reads one compact-protocol Thrift struct (a Parquet footer or
// page header) and checks it without building it: it nests at most
// maxThriftDepth levels, and no string or container claims more elements
// than bytes are left (each element takes at least one). parquet-go's
// decoder, which recurses once per level and allocates the count a list
// claims before reading its elements, then stays within the input's size.
type thriftScan struct {
	r    *bufio.Reader
	left int64   // bytes left in the input
	keep *[]byte // when not nil, the bytes read are appended to it
}

// The compact protocol's types (thrift-compact-protocol.md), and parquet-go's
// UUID.
const (
	thriftTrue = 1 + iota
	thriftFalse
	thriftByte
	thriftI16
	thriftI32
	thriftI64
	thriftDouble
	thriftBinary
	thriftList
	thriftSet
	thriftMap
	thriftStruct
	thriftUUID
)

// structure reads a struct's fields up to its stop byte.
func (s *thriftScan) structure(depth int) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("structures nested more than %d deep", maxThriftDepth)
	}
	for {
		b, err := s.byte()
		if err != nil || b == 0 { // 0: the stop field
			return err
		}
		if b>>4 == 0 { // no delta: the field id follows
			if _, err := s.uvarint(); err != nil {
				return err
			}
		}
		if t := b & 0x0f; t != thriftTrue && t != thriftFalse { // a boolean field's value is its type
			if err := s.value(t, depth); err != nil {
				return err
			}
		}
	}
}

// value reads a value of type t (an element of a container or a field's
// value) inside a struct nested depth deep.
func (s *thriftScan) value(t byte, depth int) error {
	switch t {
	case thriftTrue, thriftFalse, thriftByte:
		_, err := s.byte()
		return err
	case thriftI16, thriftI32, thriftI64:
		_, err := s.uvarint()
		return err
	case thriftDouble:
		return s.skip(8)
	case thriftUUID:
		return s.skip(16)
	case thriftBinary:
		n, err := s.count("a string")
		if err != nil {
			return err
		}
		return s.skip(n)
	case thriftList, thriftSet:
		return s.list(depth)
	case thriftMap:
		return s.mapping(depth)
	case thriftStruct:
		return s.structure(depth + 1)
	}
	return fmt.Errorf("a value of unknown type %d", t)
}

// list reads a list's or a set's header and elements.
func (s *thriftScan) list(depth int) error {
	h, err := s.byte()
	if err != nil {
		return err
	}
	n := int64(h >> 4)
	if n == 15 { // the size follows
		if n, err = s.count("a list"); err != nil {
			return err
		}
	} else if n > s.left {
		return s.tooMany("a list", n)
	}
	return s.elements(n, depth, h&0x0f)
}

// mapping reads a map's header and entries.
func (s *thriftScan) mapping(depth int) error {
	n, err := s.count("a map")
	if err != nil || n == 0 {
		return err
	}
	kv, err := s.byte()
	if err != nil {
		return err
	}
	return s.elements(2*n, depth, kv>>4, kv&0x0f)
}

// elements reads n elements of the types given in turn.
func (s *thriftScan) elements(n int64, depth int, types ...byte) error {
	if depth+1 > maxThriftDepth {
		return fmt.Errorf("structures nested more than %d deep", maxThriftDepth)
	}
	for i := range n {
		if err := s.value(types[i%int64(len(types))], depth+1); err != nil {
			return err
		}
	}
	return nil
}

// count reads the size of what (a string or a container), which must not
// exceed the bytes left.
func (s *thriftScan) count(what string) (int64, error) {
	u, err := s.uvarint()
	if err != nil {
		return 0, err
	}
	if u > uint64(s.left) {
		return 0, s.tooMany(what, int64(min(u, 1<<62)))
	}
	return int64(u), nil
}

func (s *thriftScan) tooMany(what string, n int64) error {
	return fmt.Errorf("%s of %d claims more than the %d bytes left", what, n, s.left)
}

// uvarint reads a varint (zigzag-encoded or not: only its extent matters).
func (s *thriftScan) uvarint() (uint64, error) {
	var u uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := s.byte()
		if err != nil {
			return 0, err
		}
		u |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return u, nil
		}
	}
	return 0, errors.New("a varint longer than 10 bytes")
}

func (s *thriftScan) byte() (byte, error) {
	if s.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	b, err := s.r.ReadByte()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	s.left--
	if s.keep != nil {
		*s.keep = append(*s.keep, b)
	}
	return b, nil
}

// skip reads past n bytes.
func (s *thriftScan) skip(n int64) error {
	if n > s.left {
		return io.ErrUnexpectedEOF
	}
	var err error
	if s.keep != nil {
		k := len(*s.keep)
		*s.keep = append(*s.keep, make([]byte, n)...)
		_, err = io.ReadFull(s.r, (*s.keep)[k:])
	} else {
		_, err = s.r.Discard(int(n))
	}
	s.left -= n
	return unexpectedEOF(err)
}
