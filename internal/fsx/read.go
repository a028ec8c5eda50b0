package fsx

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError is a read that found more than Limit bytes.
type TooLargeError struct {
	// Name names what was read (a file's path); it may be empty.
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("over the limit of %d bytes", e.Limit)
	}
	return fmt.Sprintf("%s is over the limit of %d bytes", e.Name, e.Limit)
}

// ReadAll reads r to its end, but never more than limit+1 bytes: more than
// limit is a *TooLargeError naming name.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return data, nil
}

// ReadFile reads the file path, but no more than limit bytes: a longer
// file is a *TooLargeError ("path is over the limit of N bytes").
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}
