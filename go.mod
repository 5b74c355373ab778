module github.com/wakeonchat/wakeonchat

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/google/go-cmp v0.7.0
	github.com/qmuntal/stateless v1.7.2
)
