package main

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// safe returns s with the characters that would act on a terminal rather
// than be shown escaped as \uXXXX: control characters (C0, DEL, C1) and
// the bidirectional overrides and isolates, which reorder what follows.
// What a server sends is printed through it, so an answer cannot move
// the cursor, clear the screen or disguise a line.
func safe(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// safeStrings applies safe to every string reachable from v, a pointer to
// a decoded answer (struct fields, pointers, slices, map keys and values).
func safeStrings(v any) { walkSafe(reflect.ValueOf(v)) }

func walkSafe(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkSafe(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkSafe(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSafe(v.Index(i))
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(safe(v.String()))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			k.Set(it.Key())
			e.Set(it.Value())
			walkSafe(k)
			walkSafe(e)
			out.SetMapIndex(k, e)
		}
		if v.CanSet() {
			v.Set(out)
		}
	}
}
