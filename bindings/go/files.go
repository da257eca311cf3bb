package skycmd

import "github.com/skycmd/libskycmd/bindings/go/internal/raw"

// call runs one handle-less C call with its own error box and options bag.
func call(op string, opts []Option, fn func(c raw.SkyCall, o raw.SkyOptions) int) (raw.SkyCall, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	o, _, err := build(op, opts)
	if err != nil {
		return nil, err
	}
	defer raw.DeleteSkyOptions(o)
	c := raw.NewSkyCall()
	if c.Swigcptr() == 0 {
		return nil, &Error{Op: op, Status: ErrNoMem}
	}
	if st := fn(c, o); st != 0 {
		err := newError(op, st, c.Message())
		raw.DeleteSkyCall(c)
		return nil, err
	}
	return c, nil
}

// Convert writes a Laya checkpoint directory as one GGUF file (WithType, WithHeadType,
// WithName, WithPre). On failure no partial output exists.
func Convert(layaDir, outPath string, opts ...Option) error {
	c, err := call("convert", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Convert(layaDir, outPath, o)
	})
	if err == nil {
		raw.DeleteSkyCall(c)
	}
	return err
}

// RandomModel writes a deterministic random model of a preset ("s1-pico", "s1-nano",
// "s1-micro", "base", "large") (WithSeed, WithMassive, WithLayout).
func RandomModel(preset, outPath string, opts ...Option) error {
	c, err := call("random model", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.RandomModel(preset, outPath, o)
	})
	if err == nil {
		raw.DeleteSkyCall(c)
	}
	return err
}

// Quantize re-types the tensors of a GGUF file (WithType, WithHeadType).
func Quantize(inPath, outPath string, opts ...Option) error {
	c, err := call("quantize", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Quantize(inPath, outPath, o)
	})
	if err == nil {
		raw.DeleteSkyCall(c)
	}
	return err
}

// Inspect returns the printed header, metadata and tensor table of a GGUF file
// (WithMaxArray, WithJSON).
func Inspect(path string, opts ...Option) (string, error) {
	c, err := call("inspect", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Inspect(path, o)
	})
	if err != nil {
		return "", err
	}
	defer raw.DeleteSkyCall(c)
	return c.TakeOutput(), nil
}
