package config

// Parse is Load from bytes, for the tests: data is the file's content and
// dir the directory relative paths in it are resolved against ("" for the
// working directory). Path is left empty. Errors are *Error values, joined.
func Parse(data []byte, dir string) (Config, error) {
	c, errs := parse(data, dir)
	if len(errs) > 0 {
		return Config{}, join(errs)
	}
	return c, nil
}
