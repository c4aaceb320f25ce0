// Package types holds the generic values the bindings wit-bindgen generates
// use for WIT's option, result, tuple and unit types.
package types

// The tags of an Option.
const (
	OptionNone = 0
	OptionSome = 1
)

// Option is WIT's option<T>.
type Option[T any] struct {
	tag   uint8
	value T
}

// Some is an option holding value.
func Some[T any](value T) Option[T] {
	return Option[T]{OptionSome, value}
}

// None is an empty option.
func None[T any]() Option[T] {
	return Option[T]{}
}

// Tag is OptionNone or OptionSome.
func (o Option[T]) Tag() uint8 {
	return o.tag
}

// IsSome says whether it holds a value.
func (o Option[T]) IsSome() bool {
	return o.tag == OptionSome
}

// IsNone says whether it is empty.
func (o Option[T]) IsNone() bool {
	return o.tag == OptionNone
}

// Some is its value; it panics when it is empty.
func (o Option[T]) Some() T {
	if o.tag != OptionSome {
		panic("tag mismatch")
	}
	return o.value
}

// SomeOr is its value, or fallback when it is empty.
func (o Option[T]) SomeOr(fallback T) T {
	if o.tag != OptionSome {
		return fallback
	}
	return o.value
}

// The tags of a Result.
const (
	ResultOk  = 0
	ResultErr = 1
)

// Result is WIT's result<T, E>.
type Result[T any, E any] struct {
	tag uint8
	ok  T
	err E
}

// Ok is a success holding value.
func Ok[T any, E any](value T) Result[T, E] {
	return Result[T, E]{tag: ResultOk, ok: value}
}

// Err is a failure holding value.
func Err[T any, E any](value E) Result[T, E] {
	return Result[T, E]{tag: ResultErr, err: value}
}

// Tag is ResultOk or ResultErr.
func (r Result[T, E]) Tag() uint8 {
	return r.tag
}

// IsOk says whether it is a success.
func (r Result[T, E]) IsOk() bool {
	return r.tag == ResultOk
}

// IsErr says whether it is a failure.
func (r Result[T, E]) IsErr() bool {
	return r.tag == ResultErr
}

// Ok is the success's value; it panics on a failure.
func (r Result[T, E]) Ok() T {
	if r.tag != ResultOk {
		panic("tag mismatch")
	}
	return r.ok
}

// Err is the failure's value; it panics on a success.
func (r Result[T, E]) Err() E {
	if r.tag != ResultErr {
		panic("tag mismatch")
	}
	return r.err
}

// Tuple2 is WIT's tuple<T0, T1>.
type Tuple2[T0 any, T1 any] struct {
	F0 T0
	F1 T1
}

// Unit is the empty value, as in result<_, E>.
type Unit struct{}
