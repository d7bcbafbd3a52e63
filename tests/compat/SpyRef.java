// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * SpyRef.java - spymemcached (Debian's libspymemcached-java) as the oracle
 * of which server owns a key: its own KetamaNodeLocator, built as
 * KetamaConnectionFactory builds it (KETAMA_HASH, the given key format,
 * the weights map), answers getPrimary(key) for every key.
 *
 *   java -cp spymemcached.jar:DIR SpyRef SPYMEMCACHED|LIBMEMCACHED
 *
 * Requests on stdin, as dalli_ref.rb takes them: "ring", then
 * "server host:port:weight" lines, then "key HEX" lines; one answer line
 * per key, the index of its server. Addresses are made as AddrUtil makes
 * them (new InetSocketAddress(host, port)); a weights map is passed only
 * when some weight is not 1, as an application without weights passes
 * none. The locator reads nothing of a node but its address, so a node
 * here is a proxy that answers getSocketAddress() and nothing else:
 * connecting is not what is tested.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeKeyFormatter;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedNode;

public class SpyRef {
	static MemcachedNode node(InetSocketAddress a) {
		return (MemcachedNode)Proxy.newProxyInstance(
			MemcachedNode.class.getClassLoader(),
			new Class<?>[] { MemcachedNode.class },
			(p, m, args) -> {
				switch (m.getName()) {
				case "getSocketAddress":
					return a;
				case "hashCode":
					return System.identityHashCode(p);
				case "equals":
					return p == args[0];
				case "toString":
					return "node " + a;
				default:
					throw new UnsupportedOperationException(m.getName());
				}
			});
	}

	static byte[] unhex(String h) {
		byte[] b = new byte[h.length() / 2];
		for (int i = 0; i < b.length; i++)
			b[i] = (byte)Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
		return b;
	}

	public static void main(String[] argv) throws Exception {
		KetamaNodeKeyFormatter.Format fmt =
			KetamaNodeKeyFormatter.Format.valueOf(argv[0]);
		BufferedReader in = new BufferedReader(
			new InputStreamReader(System.in, StandardCharsets.US_ASCII));
		StringBuilder out = new StringBuilder();
		List<MemcachedNode> nodes = new ArrayList<>();
		Map<InetSocketAddress, Integer> weights = new HashMap<>();
		boolean weighted = false;
		KetamaNodeLocator loc = null;
		String line;

		while ((line = in.readLine()) != null) {
			String[] w = line.split(" ", 2);
			if (w[0].equals("ring")) {
				nodes = new ArrayList<>();
				weights = new HashMap<>();
				weighted = false;
				loc = null;
			} else if (w[0].equals("server")) {
				String[] f = w[1].split(":");
				InetSocketAddress a = new InetSocketAddress(
					f[0], Integer.parseInt(f[1]));
				int weight = Integer.parseInt(f[2]);
				nodes.add(node(a));
				weights.put(a, weight);
				weighted |= weight != 1;
			} else if (w[0].equals("key")) {
				if (loc == null)
					loc = new KetamaNodeLocator(
						nodes, DefaultHashAlgorithm.KETAMA_HASH,
						fmt, weighted ? weights : new HashMap<>());
				String key = new String(unhex(w[1]),
							StandardCharsets.UTF_8);
				out.append(nodes.indexOf(loc.getPrimary(key)))
					.append('\n');
			} else {
				throw new IllegalArgumentException("bad line " + line);
			}
		}
		System.out.print(out);
	}
}
