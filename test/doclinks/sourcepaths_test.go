package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kernelSourcePath is a kernel source named in Go text (a message, a
// comment): kernels/.../name.cu or .cuh.
var kernelSourcePath = regexp.MustCompile(`\bkernels/[A-Za-z0-9_/]+\.cuh?\b`)

// Every kernel source a Go file names exists: a message that points a user
// at a file that moved sends them nowhere.
func TestKernelSourcesNamedInGoExist(t *testing.T) {
	root := filepath.Join("..", "..")
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == ".tools" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, p := range kernelSourcePath.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				rel, _ := filepath.Rel(root, path)
				missing = append(missing, rel+": "+p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, missing, "Go files name kernel sources that do not exist")
}
