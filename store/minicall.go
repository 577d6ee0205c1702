package store

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// miniError is an error reply of miniredis (or of a script run as miniredis runs it,
// luaState): a redis.Error, as go-redis would give it.
type miniError string

func (e miniError) Error() string { return string(e) }

// RedisError marks the error as the server's reply.
func (miniError) RedisError() {}

var _ redis.Error = miniError("")

// readMiniReply reads one RESP2 reply off b and returns it with what follows it, as
// go-redis would give it: int64, string, []any (a nil element nil, an error element a
// miniError), a top-level nil as redis.Nil and an error as a miniError.
func readMiniReply(b []byte) (any, []byte, error) {
	end := bytes.Index(b, []byte("\r\n"))
	if len(b) == 0 || end < 0 {
		return nil, nil, fmt.Errorf("miniredis gave an incomplete reply %q", b)
	}
	line, rest := b[1:end], b[end+2:]
	switch b[0] {
	case '+':
		return string(line), rest, nil
	case '-':
		return nil, rest, miniError(line)
	case ':':
		n, err := strconv.ParseInt(string(line), 10, 64)
		return n, rest, err
	case '$':
		n, err := strconv.Atoi(string(line))
		switch {
		case err != nil:
			return nil, nil, err
		case n < 0:
			return nil, rest, redis.Nil
		case len(rest) < n+2:
			return nil, nil, fmt.Errorf("miniredis gave a bulk reply shorter than its %d bytes", n)
		}
		return string(rest[:n]), rest[n+2:], nil
	case '*':
		n, err := strconv.Atoi(string(line))
		switch {
		case err != nil:
			return nil, nil, err
		case n < 0:
			return nil, rest, redis.Nil
		}
		arr := make([]any, n)
		for i := range arr {
			var err error
			arr[i], rest, err = readMiniReply(rest)
			if err == redis.Nil {
				arr[i], err = nil, nil
			}
			if err != nil {
				if _, ok := err.(miniError); ok {
					arr[i], err = err, nil
					continue
				}
				return nil, nil, err
			}
		}
		return arr, rest, nil
	}
	return nil, nil, fmt.Errorf("miniredis gave a reply of unknown kind %q", b[0])
}
