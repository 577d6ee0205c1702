//go:build !linux

package cmd

import (
	"errors"
	"os"
)

// openAnonymous is Linux's alone: elsewhere a run stages its files under hidden names.
func openAnonymous(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func linkAnonymous(*os.File, string) (string, error) { return "", errors.ErrUnsupported }
