// Package inputfile opens the files a user names as inputs (weights,
// configs, tokenizers, data, adapters), refusing what is not a regular file:
// opening a named pipe (FIFO) for reading blocks until another process
// writes to it, and a device such as /dev/zero or /dev/urandom never ends,
// so a mistaken path would hang the program or fill its memory instead of
// failing with the path named.
package inputfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Check returns an error naming path when it exists and is not a regular
// file (a symbolic link is followed). A missing path is left to the open
// that follows, whose error callers already handle.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s, not a regular file: give the path of a file", Kind(fi.Mode()))}
}

// Open is os.Open of a regular file.
func Open(path string) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// ReadFile is os.ReadFile of a regular file of at most MaxReadFile bytes.
// What is read whole is a config, an index, a tokenizer or a small input,
// megabytes at most; a larger file is a wrong path (a weights file where
// its config was meant), and reading it would fill memory before the parse
// said so.
func ReadFile(path string) ([]byte, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > MaxReadFile {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, more than the %d MiB a file read whole may have "+
			"(a config, an index, a tokenizer): is it the file meant?", fi.Size(), MaxReadFile>>20)}
	}
	return os.ReadFile(path)
}

// MaxReadFile is the largest file ReadFile reads (a var for tests): 1 GiB,
// far above any tokenizer.json (Ministral's tekken: 15 MB) or
// safetensors index.
var MaxReadFile int64 = 1 << 30

// Kind names what a file that is not a regular one is, for messages: "a
// named pipe (FIFO)", "a socket", "a device", "a directory".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0, m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// ErrLongLine is ReadLine's error for a line longer than its bound.
var ErrLongLine = errors.New("line too long")

// ReadLine is br.ReadBytes('\n') of at most max bytes, ErrLongLine past
// them (what was read of the line is dropped). Streams of JSON Lines come
// from users (a file, stdin): one without newlines (a binary file,
// /dev/zero piped in, a JSON array on one line) is then an error instead
// of all of the machine's memory.
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, ErrLongLine
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// TrimBOM is b without a leading UTF-8 byte-order mark, which Windows
// editors write at the start of a file: the first line of JSON Lines, or a
// whole JSON file, read as the data loaders read one.
func TrimBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }
