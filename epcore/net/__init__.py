"""CEDAR, HTCondor's wire protocol: epcore's one network face (issue 22).

HTCondor's daemons and tools talk CEDAR over TCP; this package speaks it, as server (the
pool's listener) and as client, so that HTCondor's own clients (``htcondor2``) reach an
epcore pool and epcore reaches HTCondor daemons. It is runtime-level shell: it knows no
role; roles offer command handlers through :class:`~epcore.net.dispatch.CommandTable` and
use the codec, never a socket.

The layers, bottom up (each sans-I/O except the listener and the blocking client):

- :mod:`~epcore.net.sinful`: addresses, ``<127.0.0.1:9618?addrs=...>``.
- :mod:`~epcore.net.frames`: packets (5-byte header, end-of-message flag) to messages
  and back, bounded.
- :mod:`~epcore.net.codec`: integers, strings and ClassAds inside a message.
- :mod:`~epcore.net.commands`: HTCondor's command numbers and their authorization levels.
- :mod:`~epcore.net.conversation`: a command's exchange as a generator that yields
  :class:`~epcore.net.conversation.Send` and :class:`~epcore.net.conversation.Receive`
  steps; the same generator is driven by the listener (non-blocking) or by
  :mod:`~epcore.net.client` (blocking).
- :mod:`~epcore.net.policy`: the SEC_<level>_* knobs with HTCondor's defaults, and their
  reconciliation between client and server.
- :mod:`~epcore.net.authz`: ALLOW_<level> / DENY_<level>.
- :mod:`~epcore.net.handshake`: DC_AUTHENTICATE, server and client side, with sessions
  and their resumption.
- :mod:`~epcore.net.listener`: the TCP listener, a Service of the runtime's loop.

The seams for the crypto layer (TOKEN/IDTOKENS, the ECDH key exchange and AES-GCM live in
their own modules and plug in here; nothing below needs to change for them):

1. **Authentication methods** (:mod:`~epcore.net.methods`): a method is a
   :class:`~epcore.net.methods.AuthMethod` (its HTCondor name, its handshake bit, and
   ``server(context)`` / ``client(context)`` generators that run its exchange over the
   conversation and return the authenticated identity). :class:`~epcore.net.methods.
   MethodRegistry` holds them by name; FS and CLAIMTOBE are registered by default; a
   TOKEN method registers itself with ``registry.register(method)``, and the policy's
   SEC_<level>_AUTHENTICATION_METHODS decides which ones a level offers.
2. **Key exchange**, server side (:class:`~epcore.net.handshake.KeyExchange`, passed as
   ``SecurityServer(key_exchange=...)``; ``epcore.pool.network.build_listener`` makes the
   pool's): given the client's ``ECDHPublicKey`` (policy ad attribute) and the agreed
   crypto method it returns the server's public key and a factory that, once
   authentication is done, makes the stream's :class:`~epcore.net.frames.PacketProtection`
   (given whether encryption and integrity are on). Client side the same in reverse
   (:class:`~epcore.net.client.ClientKeyExchange`, ``start_command(key_exchange=...)``).
   Without one (``key_exchange=None``) the server answers without ``ECDHPublicKey`` or
   ``CryptoMethods``, so ENCRYPTION and INTEGRITY reconcile to NO (and a peer that
   requires them is refused, as HTCondor refuses it). The session key itself never
   crosses the wire: HTCondor's method-level key exchange is answered "no key" (0).
3. **Message protection** (:class:`~epcore.net.frames.PacketProtection`): once the key is
   agreed and ENCRYPTION or INTEGRITY is YES, the handshake calls
   :meth:`~epcore.net.frames.Framer.protect` with the protection the key exchange made;
   every later packet is sealed and opened by it (AES-GCM: the 5-byte header is the
   additional data; the first sealed packet each way also binds
   :class:`~epcore.net.frames.Transcript`'s SHA-256 digests of the packets sent and
   received in the clear). The codec then codes strings with their lengths
   (``encrypted=True``), as HTCondor's Stream does on an encrypted stream.
4. **Policy** (:mod:`~epcore.net.policy`): Authentication, Encryption, Integrity,
   AuthMethods and CryptoMethods are negotiated for every level with HTCondor's table
   (REQUIRED/PREFERRED/OPTIONAL/NEVER to YES/NO/fail); AES comes first among the crypto
   methods a key exchange offers and, as in HTCondor, turns Encryption and Integrity on
   whenever authentication happens.
"""
