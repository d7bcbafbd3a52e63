// gomemcache_ref.go - gomemcache (Debian's golang-github-bradfitz-gomemcache-dev)
// as the oracle of where a key goes: its own ServerList.PickServer names
// the server of every key. Built by ring_compat offline, in GOPATH mode
// against the Debian source under /usr/share/gocode.
//
//	gomemcache_ref [-lists N] [-keys K] [-seed S]
//
// Prints, for ring_compat.c (the line format of the other references):
//
//	ring I            a new server list follows
//	server HOST:PORT  one line per server, in the client's order
//	key HEX INDEX     a key (hex of its bytes) and the server PickServer chose
//	end               the end of a list's keys
package main

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand"
	"os"

	"github.com/bradfitz/gomemcache/memcache"
)

// A key gomemcache takes (legalKey: 1..250 bytes, none <= ' ' or 0x7f):
// short and long ASCII, UTF-8, and any other byte it allows.
func randomKey(r *rand.Rand) []byte {
	lens := []int{1, 2, 3, 4, 7, 8, 9, 16, 31, 32, 33, 64, 100, 200, 249, 250}
	n := lens[r.Intn(len(lens))]
	utf8 := []string{"\u00e9", "\u00df", "\u65e5", "\u672c", "\U0001f600", "\u0416"}
	k := make([]byte, 0, n+4)
	kind := r.Intn(3)
	for len(k) < n {
		switch {
		case kind == 1 && r.Intn(3) == 0:
			k = append(k, utf8[r.Intn(len(utf8))]...)
		case kind == 2:
			b := byte(0x21 + r.Intn(0xff-0x21+1))
			if b == 0x7f {
				b = 0x80
			}
			k = append(k, b)
		default:
			k = append(k, byte(0x21+r.Intn(94)))
		}
	}
	return k[:n]
}

func main() {
	lists := flag.Int("lists", 20, "server lists")
	keys := flag.Int("keys", 500, "keys per list")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	r := rand.New(rand.NewSource(*seed))
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 20, 25, 32, 47, 50, 64, 77, 90, 99, 100}
	for li := 0; li < *lists; li++ {
		n := sizes[li%len(sizes)]
		addrs := make([]string, n)
		index := map[string]int{}
		for i := range addrs {
			port := 11211
			if li%2 == 1 {
				port = 1024 + r.Intn(60000)
			}
			addrs[i] = fmt.Sprintf("10.%d.%d.%d:%d", li, i/250, i%250+1, port)
			index[addrs[i]] = i
		}
		var ss memcache.ServerList
		if err := ss.SetServers(addrs...); err != nil {
			fmt.Fprintln(os.Stderr, "gomemcache_ref:", err)
			os.Exit(1)
		}
		fmt.Fprintf(out, "ring %d\n", li)
		for _, a := range addrs {
			fmt.Fprintf(out, "server %s\n", a)
		}
		for i := 0; i < *keys; i++ {
			k := randomKey(r)
			a, err := ss.PickServer(string(k))
			if err != nil {
				fmt.Fprintln(os.Stderr, "gomemcache_ref:", err)
				os.Exit(1)
			}
			fmt.Fprintf(out, "key %s %d\n", hex.EncodeToString(k), index[a.String()])
		}
		fmt.Fprintln(out, "end")
	}
}
