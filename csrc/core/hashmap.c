/* hashmap.c -- open-addressing hash tables for names and pointers, so that
 * name checks (input(), dispatch()) and duplicate checks stay linear in the
 * size of a graph (issue: 80k inputs took 7.5 s to declare and 8.9 s per
 * dispatch with pairwise strcmp loops).
 *
 * wnn_strmap maps a NUL-terminated string to a uint32_t; it does not copy
 * the keys (they must outlive the map: arena strings or the caller's).
 * wnn_ptrset is a set of pointers.  Both grow at 1/2 load; both are plain
 * malloc'd memory freed with *_free. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t
hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t
hash_ptr(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

void
wnn_strmap_free(wnn_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

static bool
strmap_grow(wnn_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    const char **keys = calloc(cap, sizeof(char *));
    uint32_t *vals = malloc(cap * sizeof(uint32_t));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i]) {
            size_t j = hash_str(m->keys[i]) & (cap - 1);
            while (keys[j]) {
                j = (j + 1) & (cap - 1);
            }
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool
wnn_strmap_get(const wnn_strmap *m, const char *key, uint32_t *val)
{
    if (!m->cap) {
        return false;
    }
    for (size_t j = hash_str(key) & (m->cap - 1); m->keys[j];
         j = (j + 1) & (m->cap - 1)) {
        if (strcmp(m->keys[j], key) == 0) {
            if (val) {
                *val = m->vals[j];
            }
            return true;
        }
    }
    return false;
}

int
wnn_strmap_put(wnn_strmap *m, const char *key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap && !strmap_grow(m)) {
        return -1;
    }
    size_t j = hash_str(key) & (m->cap - 1);
    for (; m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        if (strcmp(m->keys[j], key) == 0) {
            return 1; /* present: unchanged */
        }
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
    return 0;
}

void
wnn_ptrset_free(wnn_ptrset *s)
{
    free(s->keys);
    memset(s, 0, sizeof(*s));
}

static bool
ptrset_grow(wnn_ptrset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    const void **keys = calloc(cap, sizeof(void *));
    if (!keys) {
        return false;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->keys[i]) {
            size_t j = hash_ptr(s->keys[i]) & (cap - 1);
            while (keys[j]) {
                j = (j + 1) & (cap - 1);
            }
            keys[j] = s->keys[i];
        }
    }
    free(s->keys);
    s->keys = keys;
    s->cap = cap;
    return true;
}

int
wnn_ptrset_add(wnn_ptrset *s, const void *p)
{
    if ((s->n + 1) * 2 > s->cap && !ptrset_grow(s)) {
        return -1;
    }
    size_t j = hash_ptr(p) & (s->cap - 1);
    for (; s->keys[j]; j = (j + 1) & (s->cap - 1)) {
        if (s->keys[j] == p) {
            return 1;
        }
    }
    s->keys[j] = p;
    s->n++;
    return 0;
}
