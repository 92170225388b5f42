package httpapi_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// benchEnv starts Parley with a client whose transport keeps enough idle
// connections for RunParallel.
func benchEnv(b *testing.B) (*apitest.Env, *client.Client) {
	e := apitest.New(b)
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	c := client.New(e.Server.URL, e.CredA.Username, e.CredA.Secret, client.WithHTTPClient(&http.Client{Transport: tr}))
	return e, c
}

// BenchmarkHTTPCreateUser is POST /users end to end: signing, HTTP on
// loopback, verification, validation, the SQLite insert and the answer.
func BenchmarkHTTPCreateUser(b *testing.B) {
	e, c := benchEnv(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			phone := "+1415" + strconv.FormatInt(2000000+i, 10)
			if _, err := c.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some(phone),
				UserFields: parley.UserFields{FirstName: parley.Some("Ann"), PostalCode: parley.Some("10001")}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHTTPLookup is GET /users?phone_number= end to end.
func BenchmarkHTTPLookup(b *testing.B) {
	e, c := benchEnv(b)
	const users = 1000
	for i := range users {
		e.MustCreateUser(b, c, parley.UserCreate{PhoneNumber: parley.Some("+1415" + strconv.Itoa(3000000+i))})
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1) % users
			if _, err := c.FindUserByPhone(e.Ctx, "+1415"+strconv.FormatInt(3000000+i, 10)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
