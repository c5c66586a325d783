// SPDX-License-Identifier: GPL-2.0
/*
 * rdmaxfer - who may connect: a listener's allow-list, and the key
 * handshake that proves both ends hold the same pre-shared key.
 *
 * The allow-list (LISTEN's prefixes) is checked first thing in the
 * CONNECT_REQUEST handler: a client outside it is rejected before any QP
 * is made for it.
 *
 * The key handshake, when the client's CONNECT names a key, in three
 * legs, the first two inside rdma_cm's private data:
 *
 *   REQ   client -> server: hello + Nc             (48 of the 56 bytes a REQ has)
 *   REP   server -> client: hello + Ns + MAC("rdmaxfer server")
 *   AUTH  client -> server: MAC("rdmaxfer client"), its first message
 *
 * Each MAC is HMAC-SHA256 under the key of a label, both nonces, both
 * hellos as sent, and both ends' addresses as each end sees them (the
 * client's, then the server's: so a proof made for one pair of hosts is
 * no good between another).  The nonces are fresh on both sides, so no
 * recorded leg is any good again; the labels differ, so the server's
 * proof, which it gives to whoever asks, is never a client's.  The client
 * checks the server's proof before its CONNECT returns: until then nothing
 * of its user's is reachable.  The server hands the connection to ACCEPT
 * only once the client's proof has come and matched (listen.c), and takes
 * no other message before it (ctrl.c): an unproven client gets a QP and a
 * reply, never a window, a slot or an echo, and is dropped on its first
 * other message, or when it stays silent (keepalive.c), or when the
 * backlog it counts against is closed.
 *
 * A listener without a key rejects a client that asks for one
 * (RDMAXFER_REJECT_AUTH_UNAVAILABLE) and a listener with one a client
 * that does not (RDMAXFER_REJECT_AUTH_REQUIRED), both before a QP.  Keys
 * are "logon" or "user" keys in the caller's keyrings, named by serial
 * number; the listener holds a reference and reads the key for each
 * request, so a key revoked or expired refuses new clients at once, and
 * a key updated is used from the next request.  Connections already
 * established stay: the key guards who gets in, not what they do after.
 * No byte of a key is copied out of the key's payload, logged or traced.
 *
 * Context: process context (rdma_cm handlers, ioctls, the receive work).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <keys/user-type.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/key.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/ipv6.h>

#include "rdmaxfer.h"
#include "trace.h"

/* keys come from the keyring: every distribution kernel has one */
#ifndef CONFIG_KEYS
#error "rdmaxfer needs CONFIG_KEYS (the kernel keyring holds its keys)"
#endif

#define RDMAXFER_AUTH_CLIENT	"rdmaxfer client"
#define RDMAXFER_AUTH_SERVER	"rdmaxfer server"

/* --- the allow-list ---------------------------------------------------------- */

/**
 * rdmaxfer_allow_copy - take a listener's allow-list from LISTEN's argument
 * @l: the listener (not yet listening)
 * @uptr: user pointer to @count struct rdmaxfer_prefix
 * @count: how many (0: none, any client)
 *
 * Context: process context (LISTEN).
 * Return: 0, -EINVAL (too many, a family other than AF_INET or AF_INET6,
 * a prefix too long, bits set past it, reserved bytes set), -EFAULT,
 * -ENOMEM.
 */
int rdmaxfer_allow_copy(struct rdmaxfer_listener *l, u64 uptr, u32 count)
{
	struct rdmaxfer_prefix *p;
	u32 i, bits, b;

	if (!count)
		return 0;
	if (count > RDMAXFER_MAX_ALLOW)
		return -EINVAL;
	p = memdup_user(u64_to_user_ptr(uptr), count * sizeof(*p));
	if (IS_ERR(p))
		return PTR_ERR(p);
	for (i = 0; i < count; i++) {
		bits = p[i].family == AF_INET ? 32 : p[i].family == AF_INET6 ? 128 : 0;
		if (!bits || p[i].prefix_len > bits || memchr_inv(p[i].__reserved, 0, 5))
			goto inval;
		for (b = p[i].prefix_len; b < 128; b++)
			if (p[i].addr[b / 8] & (0x80 >> (b % 8)))
				goto inval;
	}
	l->l_allow = p;
	l->l_nallow = count;
	return 0;
inval:
	kfree(p);
	return -EINVAL;
}

/* Do the first @bits bits of @a and @b agree? */
static bool rdmaxfer_prefix_match(const u8 *a, const u8 *b, u32 bits)
{
	u32 bytes = bits / 8;
	u8 mask;

	if (memcmp(a, b, bytes))
		return false;
	if (!(bits % 8))
		return true;
	mask = 0xff << (8 - bits % 8);
	return !((a[bytes] ^ b[bytes]) & mask);
}

/**
 * rdmaxfer_allowed - may this client connect to the listener?
 * @l: the listener
 * @peer: the client's address (a CONNECT_REQUEST id's destination)
 *
 * An IPv4 client is matched against the AF_INET prefixes, also when it
 * comes to an IPv6 listener as an IPv4-mapped address; an IPv6 one
 * against the AF_INET6 prefixes.
 *
 * Return: true if the list is empty or a prefix matches.
 */
bool rdmaxfer_allowed(const struct rdmaxfer_listener *l, const struct sockaddr *peer)
{
	const struct in6_addr *a6;
	const u8 *a;
	u16 family;
	u32 i;

	if (!l->l_nallow)
		return true;
	if (peer->sa_family == AF_INET) {
		family = AF_INET;
		a = (const u8 *)&((const struct sockaddr_in *)peer)->sin_addr;
	} else if (peer->sa_family == AF_INET6) {
		a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		family = ipv6_addr_v4mapped(a6) ? AF_INET : AF_INET6;
		a = family == AF_INET ? &a6->s6_addr[12] : a6->s6_addr;
	} else {
		return false;
	}
	for (i = 0; i < l->l_nallow; i++)
		if (l->l_allow[i].family == family &&
		    rdmaxfer_prefix_match(a, l->l_allow[i].addr, l->l_allow[i].prefix_len))
			return true;
	return false;
}

/* --- keys ---------------------------------------------------------------------- */

/*
 * Is @key one we take, and usable now?  Its payload is read under its
 * semaphore, which revocation and update take for writing.
 */
static int rdmaxfer_key_check(struct key *key)
{
	const struct user_key_payload *p;
	int ret;

	if (key->type != &key_type_logon && key->type != &key_type_user)
		return -EKEYREJECTED;
	down_read(&key->sem);
	ret = key_validate(key);
	if (!ret) {
		p = user_key_payload_locked(key);
		if (!p)
			ret = -EKEYREVOKED;
		else if (p->datalen < RDMAXFER_KEY_MIN || p->datalen > RDMAXFER_KEY_MAX)
			ret = -EKEYREJECTED;
	}
	up_read(&key->sem);
	return ret;
}

/**
 * rdmaxfer_key_get - look up the key an ioctl names
 * @serial: its serial number, in the caller's keyrings
 * @keyp: out, a reference to the key
 *
 * The caller must be allowed to search for the key (as request_key()
 * would find it: possessed, or with search permission).
 *
 * Context: process context, the caller's credentials.
 * Return: 0, -ENOKEY, -EACCES, -EKEYREVOKED, -EKEYEXPIRED, -EKEYREJECTED
 * (not a "logon" or "user" key of RDMAXFER_KEY_MIN..MAX bytes).
 */
int rdmaxfer_key_get(s32 serial, struct key **keyp)
{
	key_ref_t ref;
	struct key *key;
	int ret;

	might_sleep();
	if (serial <= 0)	/* the special ids name keyrings, never our keys */
		return -ENOKEY;
	ref = lookup_user_key(serial, 0, KEY_NEED_SEARCH);
	if (IS_ERR(ref))
		return PTR_ERR(ref);
	key = key_ref_to_ptr(ref);
	ret = rdmaxfer_key_check(key);
	if (ret) {
		key_put(key);
		return ret;
	}
	*keyp = key;
	return 0;
}

/* --- the handshake --------------------------------------------------------------- */

/* An address as 16 bytes: IPv4 as IPv4-mapped IPv6, so either end agrees. */
static void rdmaxfer_auth_addr(const struct sockaddr *sa, u8 *out)
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET) {
		out[10] = 0xff;
		out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/*
 * Both proofs of a handshake: the client's into @client, the server's into
 * @server, under @key.  Return: 0, -EKEYREVOKED or -EKEYEXPIRED (the key
 * is no longer usable), or the crypto API's error.
 */
static int rdmaxfer_auth_macs(struct key *key, struct rdmaxfer_auth *a, u8 *client, u8 *server)
{
	const struct user_key_payload *p;
	struct crypto_shash *tfm;
	int ret;

	might_sleep();
	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	down_read(&key->sem);
	ret = key_validate(key);
	if (!ret) {
		p = user_key_payload_locked(key);
		ret = p ? crypto_shash_setkey(tfm, p->data, p->datalen) : -EKEYREVOKED;
	}
	up_read(&key->sem);
	if (ret)
		goto out;
	strscpy(a->a_in.label, RDMAXFER_AUTH_CLIENT, sizeof(a->a_in.label));
	ret = crypto_shash_tfm_digest(tfm, (u8 *)&a->a_in, sizeof(a->a_in), client);
	if (ret)
		goto out;
	strscpy(a->a_in.label, RDMAXFER_AUTH_SERVER, sizeof(a->a_in.label));
	ret = crypto_shash_tfm_digest(tfm, (u8 *)&a->a_in, sizeof(a->a_in), server);
out:
	crypto_free_shash(tfm);		/* zeroes the key it was given */
	return ret;
}

/* Count and trace the outcome of a handshake; @reason 0: the peer proved the key. */
static void rdmaxfer_auth_outcome(struct rdmaxfer_conn *conn, bool server, u32 reason)
{
	rdmaxfer_count(conn->c_obj.file, reason ? RDMAXFER_C_AUTH_FAILED : RDMAXFER_C_AUTH_OK, 1);
	trace_rdmaxfer_admit(conn->c_obj.file, conn->c_obj.id, &conn->c_peer, server, reason);
}

/**
 * rdmaxfer_auth_client_start - a client that names a key: begin the handshake
 * @conn: the connection (CONNECT's, not yet connecting)
 * @key: the key (the connection takes a reference of its own)
 *
 * Context: process context (CONNECT).
 * Return: 0 or -ENOMEM.
 */
int rdmaxfer_auth_client_start(struct rdmaxfer_conn *conn, struct key *key)
{
	struct rdmaxfer_auth *a;

	a = kzalloc_obj(*a, GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	get_random_bytes(a->a_in.nonce[0], RDMAXFER_NONCE_LEN);
	a->a_key = key_get(key);
	conn->c_auth = a;
	/* nothing the server sends counts before its proof is checked */
	conn->c_auth_wait = true;
	return 0;
}

/**
 * rdmaxfer_auth_request - our connect request's private data, with a key
 * @conn: the client connection (c_auth set)
 * @req: the request's private data, its hello (@req->x) built: the
 *	hello's AUTH bit and our nonce are added, and the hello is kept for
 *	the proofs
 *
 * Return: its length, RDMAXFER_CM_AUTH_REQ_LEN.
 */
u8 rdmaxfer_auth_request(struct rdmaxfer_conn *conn, struct rdmaxfer_cm_auth *req)
{
	struct rdmaxfer_auth *a = conn->c_auth;

	req->x.features |= cpu_to_be32(RDMAXFER_HELLO_AUTH);
	a->a_in.hello[0] = req->x;
	memcpy(req->nonce, a->a_in.nonce[0], RDMAXFER_NONCE_LEN);
	return RDMAXFER_CM_AUTH_REQ_LEN;
}

/**
 * rdmaxfer_auth_admit - a listener's policy for a connect request
 * @l: the listener
 * @data: the request's private data (a hello that parsed)
 * @len: its length
 * @reason: out, the reject reason when refused
 *
 * Before any QP: a client that asks for authentication where we have no
 * key, one that does not where we have one, or our key no longer usable.
 *
 * Return: 0 to go on, -EACCES to refuse.
 */
int rdmaxfer_auth_admit(struct rdmaxfer_listener *l, const void *data, u32 len, u32 *reason)
{
	const struct rdmaxfer_cm_hello_ext *x = data;
	bool asks = len >= RDMAXFER_CM_AUTH_REQ_LEN &&
		    (be32_to_cpu(x->features) & RDMAXFER_HELLO_AUTH);

	if (!l->l_key) {
		*reason = RDMAXFER_REJECT_AUTH_UNAVAILABLE;
		return asks ? -EACCES : 0;
	}
	*reason = RDMAXFER_REJECT_AUTH_REQUIRED;
	if (!asks)
		return -EACCES;
	*reason = RDMAXFER_REJECT_AUTH_UNAVAILABLE;
	return rdmaxfer_key_check(l->l_key) ? -EACCES : 0;
}

/**
 * rdmaxfer_auth_reply - the server's half: our nonce and proof, the client's expected
 * @conn: the listener's new connection (set up, addresses known)
 * @key: the listener's key
 * @data: the client's request private data (rdmaxfer_auth_admit() passed it)
 * @rep: in, our hello in @rep->x; out, the whole reply
 * @reason: out, the reject reason on failure
 *
 * Return: 0 (then conn->c_auth holds the client's expected proof and the
 * connection waits for it, c_auth_wait), or an error.
 */
int rdmaxfer_auth_reply(struct rdmaxfer_conn *conn, struct key *key, const void *data,
			struct rdmaxfer_cm_auth *rep, u32 *reason)
{
	const struct rdmaxfer_cm_auth *req = data;
	struct rdma_cm_id *id = conn->c_id;
	struct rdmaxfer_auth *a;
	int ret;

	*reason = RDMAXFER_REJECT_RESOURCES;
	a = kzalloc_obj(*a, GFP_KERNEL_ACCOUNT);
	if (!a)
		return -ENOMEM;
	conn->c_auth = a;
	a->a_server = true;
	rep->x.features |= cpu_to_be32(RDMAXFER_HELLO_AUTH);
	a->a_in.hello[0] = req->x;
	a->a_in.hello[1] = rep->x;
	memcpy(a->a_in.nonce[0], req->nonce, RDMAXFER_NONCE_LEN);
	get_random_bytes(a->a_in.nonce[1], RDMAXFER_NONCE_LEN);
	memcpy(rep->nonce, a->a_in.nonce[1], RDMAXFER_NONCE_LEN);
	rdmaxfer_auth_addr((struct sockaddr *)&id->route.addr.dst_addr, a->a_in.addr[0]);
	rdmaxfer_auth_addr((struct sockaddr *)&id->route.addr.src_addr, a->a_in.addr[1]);
	ret = rdmaxfer_auth_macs(key, a, a->a_proof, rep->mac);
	if (ret) {
		if (ret == -EKEYREVOKED || ret == -EKEYEXPIRED)
			*reason = RDMAXFER_REJECT_AUTH_UNAVAILABLE;
		return ret;
	}
	conn->c_auth_wait = true;
	return 0;
}

/**
 * rdmaxfer_auth_check_reply - the client's half: check the server's proof
 * @conn: the client connection (c_auth set)
 * @data: the reply's private data
 * @len: its length
 * @reason: out, the reason CONNECT reports on failure
 *
 * On success the proof we send is in c_auth, for rdmaxfer_auth_send().
 *
 * Context: rdma_cm's ESTABLISHED handler.
 * Return: 0; -ECONNREFUSED with @reason RDMAXFER_REJECT_AUTH_UNAVAILABLE
 * (the server does not authenticate: it has no key, or is older) or
 * RDMAXFER_REJECT_AUTH_FAILED (it holds another key); -EKEYREVOKED or
 * -EKEYEXPIRED (our key went meanwhile), or -ENOMEM (@reason 0).
 */
int rdmaxfer_auth_check_reply(struct rdmaxfer_conn *conn, const void *data, u32 len,
			      u32 *reason)
{
	const struct rdmaxfer_cm_auth *rep = data;
	struct rdmaxfer_auth *a = conn->c_auth;
	struct rdma_cm_id *id = conn->c_id;
	u8 server[RDMAXFER_MAC_LEN];
	int ret;

	*reason = RDMAXFER_REJECT_AUTH_UNAVAILABLE;
	if (len < sizeof(*rep) || !(be32_to_cpu(rep->x.features) & RDMAXFER_HELLO_AUTH))
		goto refused;
	*reason = RDMAXFER_REJECT_AUTH_FAILED;
	a->a_in.hello[1] = rep->x;
	memcpy(a->a_in.nonce[1], rep->nonce, RDMAXFER_NONCE_LEN);
	rdmaxfer_auth_addr((struct sockaddr *)&id->route.addr.src_addr, a->a_in.addr[0]);
	rdmaxfer_auth_addr((struct sockaddr *)&id->route.addr.dst_addr, a->a_in.addr[1]);
	ret = rdmaxfer_cm_fault() ? -ENOMEM : rdmaxfer_auth_macs(a->a_key, a, a->a_proof, server);
	if (ret) {
		*reason = 0;
		return ret;
	}
	if (crypto_memneq(server, rep->mac, RDMAXFER_MAC_LEN))
		goto refused;
	key_put(a->a_key);
	a->a_key = NULL;
	a->a_counted = true;
	rdmaxfer_auth_outcome(conn, false, 0);
	/* the server is who it should be: its messages count from now on */
	WRITE_ONCE(conn->c_auth_wait, false);
	return 0;
refused:
	conn->c_reject_reason = *reason;
	a->a_counted = true;
	rdmaxfer_auth_outcome(conn, false, *reason);
	return -ECONNREFUSED;
}

/**
 * rdmaxfer_auth_send - the client's proof, as its first message
 * @conn: the client connection, established, its server's proof checked
 *
 * Posted before CONNECT returns, so nothing of the user's goes before it.
 *
 * Context: rdma_cm's ESTABLISHED handler.
 * Return: 0 or the error posting it.
 */
int rdmaxfer_auth_send(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_msg_auth *msg;
	struct rdmaxfer_ctrl *ct;

	ct = rdmaxfer_ctrl_get(conn, 0, 1, false);
	if (IS_ERR(ct))
		return PTR_ERR(ct);
	msg = ct->ct_buf + sizeof(struct rdmaxfer_msg_hdr);
	memcpy(msg->mac, conn->c_auth->a_proof, RDMAXFER_MAC_LEN);
	/* the device may read the buffer after the post returns (siw's thread) */
	return rdmaxfer_ctrl_send(conn, ct, RDMAXFER_MSG_AUTH, sizeof(*msg));
}

/**
 * rdmaxfer_auth_handle - the server takes the client's proof (RDMAXFER_MSG_AUTH)
 * @conn: the listener's connection
 * @p: the payload
 * @plen: its length
 *
 * Context: the receive work (process context); the first message only.
 * A wrong proof leaves c_auth_wait set: the connection is going down, and
 * whatever else the client sent behind it (handled before the teardown
 * stops the receive work) is refused like any message before the proof.
 *
 * Return: 0 (the connection goes to ACCEPT), or -EPROTO (a proof that was
 * not asked for, sent to a client, or of the wrong size) or -EACCES (a
 * wrong proof, or another after one): the connection is dropped.
 */
int rdmaxfer_auth_handle(struct rdmaxfer_conn *conn, const void *p, u32 plen)
{
	const struct rdmaxfer_msg_auth *msg = p;
	struct rdmaxfer_auth *a = conn->c_auth;
	bool first;

	if (!READ_ONCE(conn->c_auth_wait) || !a || !a->a_server || plen != sizeof(*msg))
		return -EPROTO;
	if (a->a_counted)
		return -EACCES;
	a->a_counted = true;
	if (crypto_memneq(msg->mac, a->a_proof, RDMAXFER_MAC_LEN)) {
		rdmaxfer_auth_outcome(conn, true, RDMAXFER_REJECT_AUTH_FAILED);
		return -EACCES;
	}
	rdmaxfer_auth_outcome(conn, true, 0);
	spin_lock_bh(&conn->c_lock);
	conn->c_auth_wait = false;
	first = conn->c_await_first;
	conn->c_await_first = false;
	spin_unlock_bh(&conn->c_lock);
	if (first)	/* established already: hand it out (listen.c) */
		queue_work(rdmaxfer_wq, &conn->c_up_work);
	return 0;
}

/**
 * rdmaxfer_auth_end - a connection goes down: count a proof that never came
 * @conn: the connection, stopped
 * @error: why it went down
 */
void rdmaxfer_auth_end(struct rdmaxfer_conn *conn, int error)
{
	struct rdmaxfer_auth *a = conn->c_auth;

	if (!a || !a->a_server || a->a_counted || !READ_ONCE(conn->c_auth_wait))
		return;
	a->a_counted = true;
	/* not the client's doing: our own close, or the listener's */
	if (error != -ECANCELED && error != -ECONNABORTED)
		rdmaxfer_auth_outcome(conn, true, RDMAXFER_REJECT_AUTH_FAILED);
}

/**
 * rdmaxfer_auth_free - free a connection's handshake state
 * @conn: the connection, being freed
 */
void rdmaxfer_auth_free(struct rdmaxfer_conn *conn)
{
	struct rdmaxfer_auth *a = conn->c_auth;

	if (!a)
		return;
	if (a->a_key)
		key_put(a->a_key);
	kfree_sensitive(a);
	conn->c_auth = NULL;
}
