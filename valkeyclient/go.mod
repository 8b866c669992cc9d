module github.com/sluice-go/ratelimit/valkeyclient

go 1.26.0

replace github.com/sluice-go/ratelimit => ../

require (
	github.com/sluice-go/ratelimit v0.1.0
	github.com/stretchr/testify v1.12.1
	github.com/valkey-io/valkey-go v1.0.80
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
