module github.com/artest/artest

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/stretchr/testify v1.12.1
	github.com/x448/float16 v0.8.4
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
