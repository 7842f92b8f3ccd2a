module github.com/artest/artest

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/NVIDIA/go-nvml v0.13.0-1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e // indirect
)
