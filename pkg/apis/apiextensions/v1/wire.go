package v1

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// encoder appends protobuf fields as kube's generated marshallers write
// them: in field-number order, scalars of non-pointer fields always
// (even when zero), optional ones only when set. The first error stops
// it.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) string(num protowire.Number, s string) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

func (e *encoder) optString(num protowire.Number, s *string) {
	if s != nil {
		e.string(num, *s)
	}
}

func (e *encoder) strings(num protowire.Number, l []string) {
	for _, s := range l {
		e.string(num, s)
	}
}

// bytes writes b unless it is nil: an empty but set slice is written.
func (e *encoder) bytes(num protowire.Number, b []byte) {
	if b != nil {
		e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, b)
	}
}

func (e *encoder) bool(num protowire.Number, v bool) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v))
}

// int writes a signed varint as gogo does: negative numbers take ten
// bytes, int32 ones too.
func (e *encoder) int(num protowire.Number, v int64) {
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, uint64(v))
}

func (e *encoder) double(num protowire.Number, bits uint64) {
	e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, bits)
}

// message writes the embedded message that fill encodes.
func (e *encoder) message(num protowire.Number, fill func(*encoder)) {
	if e.err != nil {
		return
	}
	sub := encoder{}
	fill(&sub)
	if sub.err != nil {
		e.err = sub.err
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, sub.b)
}

// marshaler writes a message of k8s.io/apimachinery, encoded by its own
// generated code.
func (e *encoder) marshaler(num protowire.Number, m interface{ Marshal() ([]byte, error) }) {
	if e.err != nil {
		return
	}
	data, err := m.Marshal()
	if err != nil {
		e.err = err
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, data)
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// field is one field read from a message: its number, its wire type and
// its value (v for varint and fixed64 fields, data for length-delimited
// ones).
type field struct {
	num  protowire.Number
	typ  protowire.Type
	v    uint64
	data []byte
}

// walk calls fn with each field of the message b, in the order they
// come. Fields fn does not know it ignores, as kube's decoder skips them.
func walk(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.data, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (f field) want(typ protowire.Type) error {
	if f.typ != typ {
		return fmt.Errorf("proto: wrong wireType = %d for field %d", f.typ, f.num)
	}
	return nil
}

func (f field) string(dst *string) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	*dst = string(f.data)
	return nil
}

func (f field) optString(dst **string) error {
	var s string
	if err := f.string(&s); err != nil {
		return err
	}
	*dst = &s
	return nil
}

func (f field) appendString(dst *[]string) error {
	var s string
	if err := f.string(&s); err != nil {
		return err
	}
	*dst = append(*dst, s)
	return nil
}

// bytes sets dst to a copy of the value, an empty slice when it is empty.
func (f field) bytes(dst *[]byte) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	*dst = append([]byte{}, f.data...)
	return nil
}

func (f field) bool(dst *bool) error {
	if err := f.want(protowire.VarintType); err != nil {
		return err
	}
	*dst = f.v != 0
	return nil
}

func (f field) int32(dst *int32) error {
	if err := f.want(protowire.VarintType); err != nil {
		return err
	}
	*dst = int32(f.v)
	return nil
}

func (f field) optInt32(dst **int32) error {
	var v int32
	if err := f.int32(&v); err != nil {
		return err
	}
	*dst = &v
	return nil
}

// message decodes the field's embedded message with decode.
func (f field) message(decode func([]byte) error) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	return decode(f.data)
}

// unmarshal decodes the field's message into a type of
// k8s.io/apimachinery with its generated code.
func (f field) unmarshal(m interface{ Unmarshal([]byte) error }) error {
	return f.message(m.Unmarshal)
}
