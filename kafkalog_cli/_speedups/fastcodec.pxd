# What fastcodec shares with the other compiled modules (cimport): the records-section check
# of deep verify, on a section in memory, building no object.
from libc.stdint cimport int64_t

cdef int kl_records_clean(const unsigned char *p, int64_t end, int64_t count,
                          int64_t base_offset, int64_t base_timestamp, bint create_time,
                          int64_t *first, int64_t *last) except -1
