# cython: language_level=3
"""-j's worker-side output in direct mode, compiled (commands/workers.py): the stdout
gatherer (`Gather`, twin of _Sink's gathering), the ring of output held ahead of the turn
(`Ring`, twin of _Ring) and an item's output (`Turn`, twin of _Turn). A dump writes one to
three buffers a batch, and the Python layers between its renderer and the fd or the ring
cost more than the copy itself (profiled: the interpreter was most of what -j 2 spent
beyond -j 1). Same bytes, in the same order, to the same places: tests/cli/test_jobs.py
runs the twins side by side."""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.exc cimport PyErr_CheckSignals, PyErr_SetFromErrno
from libc.errno cimport EINTR, errno
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from posix.uio cimport iovec, writev

cdef enum:
    MAX_PARTS = 8  # buffers an emit takes (the gatherer gives two at most)

# Output held ahead of its turn is copied into the ring with stores that bypass the cache
# (x86-64's non-temporal stores; memcpy elsewhere): nothing reads it back in this process,
# and the parent writes it out after the ring has moved on. With ordinary stores, the half
# of a big dump's output that is held (2.2 GB of 4.5) passed through the core's cache and
# evicted the decoder's own working set from it: measured, dump -j 2's instructions were
# within 4 % of -j 1's (callgrind) while its CPU time was 10-20 % more.
cdef extern from *:
    """
    #include <string.h>
    #if defined(__x86_64__) && defined(__SSE2__)
    #include <emmintrin.h>
    static void kl_stream_copy(char *dst, const char *src, size_t n) {
        size_t lead = (size_t)(-(uintptr_t)dst) & 15;
        if (n < 4096) { memcpy(dst, src, n); return; }  /* (lead < 16: it fits) */
        memcpy(dst, src, lead);
        dst += lead; src += lead; n -= lead;
        while (n >= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)src);
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
            dst += 64; src += 64; n -= 64;
        }
        memcpy(dst, src, n);
        _mm_sfence();  /* ordered before the parent is told where the bytes are */
    }
    #else
    static void kl_stream_copy(char *dst, const char *src, size_t n) { memcpy(dst, src, n); }
    #endif
    """
    void kl_stream_copy(char* dst, const char* src, size_t n) nogil


cdef class Ring:
    """A worker's shared ring (see workers._Ring): `put` copies an item's parts in after
    what is still held; the turn counter says what the parent has written out."""
    cdef object _mem_obj
    cdef Py_buffer _mem
    cdef Py_buffer _turn
    cdef bint _have_mem, _have_turn
    cdef char* base
    cdef Py_ssize_t size
    cdef long long head
    # the regions, [item, start, end] in the order written: a queue in an array
    cdef long long* _reg
    cdef Py_ssize_t _first, _count, _cap

    def __cinit__(self, mem, turn):
        PyObject_GetBuffer(mem, &self._mem, PyBUF_SIMPLE | PyBUF_WRITABLE)
        self._have_mem = True
        PyObject_GetBuffer(turn, &self._turn, PyBUF_SIMPLE)
        self._have_turn = True
        if self._turn.len < 8:
            raise ValueError("the turn counter is 8 bytes")
        self._mem_obj = mem
        self.base = <char*>self._mem.buf
        self.size = self._mem.len

    def __dealloc__(self):
        self.close()

    def close(self):
        """Release the two maps (they may then be closed)."""
        if self._have_mem:
            PyBuffer_Release(&self._mem)
            self._have_mem = False
        if self._have_turn:
            PyBuffer_Release(&self._turn)
            self._have_turn = False
        free(self._reg)
        self._reg = NULL
        self._count = self._cap = self._first = 0

    @property
    def mem(self):
        return self._mem_obj

    cdef inline long long turn_now(self):
        return (<long long*>self._turn.buf)[0]

    cdef inline long long* _at(self, Py_ssize_t k):
        return self._reg + 3 * ((self._first + k) % self._cap)

    cdef int _append(self, long long item, long long start, long long end) except -1:
        cdef Py_ssize_t k, cap
        cdef long long* grown
        if self._count == self._cap:
            cap = self._cap * 2 if self._cap else 16
            grown = <long long*>malloc(cap * 3 * sizeof(long long))
            if grown == NULL:
                raise MemoryError()
            for k in range(self._count):  # unrolled from the queue's first
                memcpy(grown + 3 * k, self._at(k), 3 * sizeof(long long))
            free(self._reg)
            self._reg, self._cap, self._first = grown, cap, 0
        cdef long long* r = self._at(self._count)
        r[0], r[1], r[2] = item, start, end
        self._count += 1
        return 0

    cdef long long cput(self, long long item, Py_buffer* parts, int n_parts,
                        Py_ssize_t n) except -2:
        """The parts copied in for `item`: the position of their first byte, -1: no room
        (workers._Ring.put, step for step)."""
        cdef long long size = self.size, tail, lap, start
        cdef long long now = self.turn_now()
        cdef long long* last
        cdef Py_ssize_t at, first, k
        cdef int j
        while self._count and self._at(0)[0] < now:
            self._first = (self._first + 1) % self._cap
            self._count -= 1
        lap = self.head + (size - self.head % size) % size
        if not self._count:
            tail = self.head = lap
        else:
            tail = self._at(0)[1]
            if self._at(self._count - 1)[0] != item and lap - tail + n <= size:
                self.head = lap
        if n > size - (self.head - tail):
            return -1
        start = self.head
        for j in range(n_parts):
            k = parts[j].len
            at = self.head % size
            first = k if k <= size - at else size - at
            kl_stream_copy(self.base + at, <char*>parts[j].buf, first)
            if first < k:  # round the end of the ring
                kl_stream_copy(self.base, <char*>parts[j].buf + first, k - first)
            self.head += k
        if self._count:
            last = self._at(self._count - 1)
            if last[0] == item:
                last[2] = self.head
                return start
        self._append(item, start, self.head)
        return start

    def put(self, long long item, parts, Py_ssize_t n):
        """As workers._Ring.put: the position of the parts' first byte, or None."""
        cdef Py_buffer views[MAX_PARTS]
        cdef int got = _views(parts, views)
        try:
            at = self.cput(item, views, got, n)
        finally:
            _release(views, got)
        return None if at < 0 else at


cdef int _views(parts, Py_buffer* views) except -1:
    """A buffer view of each of `parts` (at most MAX_PARTS), in `views`: how many."""
    cdef int got = 0
    if len(parts) > MAX_PARTS:
        raise ValueError(f"at most {MAX_PARTS} buffers at once")
    try:
        for p in parts:
            PyObject_GetBuffer(p, &views[got], PyBUF_SIMPLE)
            got += 1
    except BaseException:
        _release(views, got)
        raise
    return got


cdef void _release(Py_buffer* views, int got):
    cdef int j
    for j in range(got):
        PyBuffer_Release(&views[j])


cdef int _writev_all(int fd, Py_buffer* views, int n_parts) except -1:
    """All of the parts to `fd`, in order: writev, again for what a short write left
    (a pipe, a signal), as workers._writev_all; EINTR runs the signal handlers, as os's."""
    cdef iovec iov[MAX_PARTS]
    cdef int j, first = 0
    cdef Py_ssize_t done
    for j in range(n_parts):
        iov[j].iov_base = views[j].buf
        iov[j].iov_len = views[j].len
    while first < n_parts:
        done = writev(fd, iov + first, n_parts - first)
        if done < 0:
            if errno == EINTR:
                PyErr_CheckSignals()
                continue
            PyErr_SetFromErrno(OSError)
            return -1
        while first < n_parts and <size_t>done >= iov[first].iov_len:
            done -= iov[first].iov_len
            first += 1
        if first < n_parts:
            iov[first].iov_base = <char*>iov[first].iov_base + done
            iov[first].iov_len -= done
    return 0


cdef class Turn:
    """One item's output in direct mode (workers._Turn): held until the turn counter reaches
    the item (in the ring, then, once it refuses, in `held`: a workers._Held made not to try
    the ring), written straight to the fds from then on. `held`'s ring part (`ring`,
    `ring_start`, `ring_len`) is kept here and set on it when it is handed on."""
    cdef Ring _ring
    cdef Py_buffer _turn
    cdef bint _have_turn, _ring_ok
    cdef long long _item
    cdef int _me
    cdef public object held
    cdef list _runs
    cdef long long _ring_start, _ring_len

    def __cinit__(self, long long item, held, Ring ring, turn, int me):
        PyObject_GetBuffer(turn, &self._turn, PyBUF_SIMPLE)
        self._have_turn = True
        self._item, self.held, self._ring, self._me = item, held, ring, me
        self._runs = held.runs
        self._ring_ok = ring is not None

    def __dealloc__(self):
        if self._have_turn:
            PyBuffer_Release(&self._turn)

    cdef inline bint _mine(self):
        return (<long long*>self._turn.buf)[0] == self._item

    cdef int _catch_up(self) except -1:
        held, self.held = self.held, None
        self._sync_into(held)
        held.write_out()
        return 0

    cdef void _sync_into(self, held):
        if self._ring_len:
            held.ring, held.ring_start, held.ring_len = (
                self._me, self._ring_start, self._ring_len)

    def add(self, int fd, parts, Py_ssize_t n):
        """`parts` (buffers, `n` bytes in all) for `fd`, after what was added before."""
        cdef Py_buffer views[MAX_PARTS]
        cdef int got
        cdef long long at
        cdef Py_ssize_t k
        cdef list last
        if self.held is not None:
            if self._mine():
                self._catch_up()
            else:
                if self._ring_ok:
                    got = _views(parts, views)
                    try:
                        at = self._ring.cput(self._item, views, got, n)
                    finally:
                        _release(views, got)
                    if at >= 0:
                        if not self._ring_len:
                            self._ring_start = at
                        self._ring_len += n
                        k = len(self._runs)
                        if k and (<list>self._runs[k - 1])[0] == fd:
                            last = <list>self._runs[k - 1]
                            last[1] += n
                        else:
                            self._runs.append([fd, n])
                        return
                    self._ring_ok = False  # the ring part is a prefix: once refused, never again
                self.held.add(fd, parts, n)
                return
        got = _views(parts, views)
        try:
            _writev_all(fd, views, got)
        finally:
            _release(views, got)

    def finish(self):
        """What the parent must write when the turn comes (None: nothing)."""
        if self.held is not None and self._mine():
            self._catch_up()
        if self.held is None:
            return None
        self._sync_into(self.held)
        return self.held if self._runs else None


cdef class Gather:
    """A worker's stdout writes (workers._Sink with `gather`): those under `pass_` bytes
    gathered up to `gather`, a bigger one handed on as it is with what was gathered before
    it, in one call of `emit(parts, n)`."""
    cdef object _emit
    cdef bytearray _buf
    cdef Py_ssize_t _gather, _pass

    def __cinit__(self, emit, Py_ssize_t gather, Py_ssize_t pass_):
        self._emit, self._gather, self._pass = emit, gather, pass_
        self._buf = bytearray()

    def write(self, b):
        cdef Py_buffer view
        cdef Py_ssize_t n, had
        PyObject_GetBuffer(b, &view, PyBUF_SIMPLE)
        n = view.len
        try:
            if n < self._pass:
                had = PyByteArray_GET_SIZE(self._buf)
                PyByteArray_Resize(self._buf, had + n)
                memcpy(PyByteArray_AS_STRING(self._buf) + had, view.buf, n)
                if had + n >= self._gather:
                    self.flush()
                return n
        finally:
            PyBuffer_Release(&view)
        if PyByteArray_GET_SIZE(self._buf):
            held, self._buf = self._buf, bytearray()
            self._emit((held, b), PyByteArray_GET_SIZE(held) + n)
        elif n:
            self._emit((b,), n)
        return n

    def flush(self):
        if PyByteArray_GET_SIZE(self._buf):
            held, self._buf = self._buf, bytearray()
            self._emit((held,), PyByteArray_GET_SIZE(held))
