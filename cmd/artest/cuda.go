package main

import (
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/cli"
)

// openCUDA is set once the cuda backend exists; nil means auto picks host.
var openCUDA func(o *cli.Options) (backend.Backend, error)
