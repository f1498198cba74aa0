/* oci/image.c: index, manifest and config documents into structs; images/store.c: which names are private. */
#include <errno.h>
#include <string.h>

#include "../../images/store.h"
#include "../../oci/image.h"
#include "check.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* Package caches and commits are private to their store (images/store.h). */
static void private_names(void)
{
    CHECK(images_name_private("localhost/nsbox-cache/packages:0123"));
    CHECK(images_name_private("localhost/nsbox-commit/env1:latest"));
    CHECK(images_name_private("localhost/nsbox-commit/alice-t01020304/env1:latest"));
    CHECK(!images_name_private("localhost/nsbox-default:latest"));
    CHECK(!images_name_private("localhost/nsbox-commitx/env1:latest"));
    CHECK(!images_name_private("docker.io/localhost/nsbox-cache/packages:0123"));
    CHECK(!images_name_private(NULL));
    char *pub[] = {"localhost/nsbox-commit/a:latest", "localhost/nsbox-default:latest", NULL};
    char *priv[] = {"localhost/nsbox-commit/a:latest", "localhost/nsbox-cache/packages:k", NULL};
    char *none[] = {NULL};
    struct images_image im = {.names = pub};
    CHECK(!images_image_private(&im));
    im.names = priv;
    CHECK(images_image_private(&im));
    im.names = none; /* an image without names is no one's private one */
    CHECK(!images_image_private(&im));
    im.names = NULL;
    CHECK(!images_image_private(&im));
}

static void parses_manifest(void)
{
    const char *j =
        "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
        "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
        "\",\"size\":10},"
        "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" D2
        "\",\"size\":20}]}";
    struct oci_manifest m;
    struct nsbox_err err;
    enum oci_compression c;
    CHECK(oci_manifest_parse(j, strlen(j), &m, &err) == 0);
    CHECK_STR(m.config.digest, D1);
    CHECK(m.n_layers == 1 && m.layers[0].size == 20);
    CHECK(oci_layer_compression(m.layers[0].media_type, &c, &err) == 0 &&
          c == OCI_COMPRESSION_ZSTD);
    oci_manifest_free(&m);
}

static void rejects_bad_manifests(void)
{
    struct oci_manifest m;
    struct nsbox_err err;
    const char *cases[] = {
        "[]",
        "{\"schemaVersion\":1}",
        "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha512:abc\",\"size\":1},\"layers\":[]}",
        "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":-1},\"layers\":[]}",
        "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1}}",
        "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1
        "\",\"size\":1},\"layers\":[{\"digest\":\"../../etc\",\"size\":1}]}",
        "{\"schemaVersion\":2,\"schemaVersion\":2}",
        "{\"schemaVersion\":2,",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK(oci_manifest_parse(cases[i], strlen(cases[i]), &m, &err) < 0);
}

static void rejects_unknown_layer_types(void)
{
    enum oci_compression c;
    struct nsbox_err err;
    CHECK(oci_layer_compression("application/vnd.oci.image.layer.v1.tar+gzip+encrypted", &c, &err) <
          0);
    CHECK(strstr(err.msg, "encrypted") != NULL);
    CHECK(oci_layer_compression(NULL, &c, &err) < 0);
    CHECK(oci_layer_compression("application/vnd.docker.image.rootfs.diff.tar.gzip", &c, &err) ==
              0 &&
          c == OCI_COMPRESSION_GZIP);
}

static void parses_config(void)
{
    const char *j =
        "{\"os\":\"linux\",\"architecture\":\"amd64\",\"config\":{\"Env\":[\"PATH=/bin\",\"A=b\"],"
        "\"Entrypoint\":null,\"Cmd\":[\"python3\",\"-c\",\"pass\"],\"WorkingDir\":\"/w\",\"User\":\"1000:1000\","
        "\"Labels\":{\"sandbox.language\":\"python\",\"x\":\"y\"}},"
        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]}}";
    struct oci_image_config c;
    struct nsbox_err err;
    CHECK(oci_config_parse(j, strlen(j), &c, &err) == 0);
    CHECK_STR(c.env[1], "A=b");
    CHECK(c.env[2] == NULL && c.entrypoint == NULL);
    CHECK_STR(c.cmd[2], "pass");
    CHECK_STR(c.working_dir, "/w");
    CHECK_STR(c.user, "1000:1000");
    CHECK_STR(oci_config_label(&c, "sandbox.language"), "python");
    CHECK(oci_config_label(&c, "nope") == NULL);
    CHECK(c.n_diff_ids == 1);
    oci_config_free(&c);
    const char *bad = "{\"config\":{\"Env\":[1]}}";
    CHECK(oci_config_parse(bad, strlen(bad), &c, &err) < 0);
    CHECK(strstr(err.msg, "Env") != NULL);
}

static void index_picks_platform(void)
{
    const char *j =
        "{\"schemaVersion\":2,\"manifests\":["
        "{\"digest\":\"" D1
        "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
        "{\"digest\":\"" D2
        "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
    struct oci_index idx;
    struct nsbox_err err;
    CHECK(oci_index_parse(j, strlen(j), &idx, &err) == 0);
    const struct oci_descriptor *d = oci_index_find(&idx, "linux", "amd64", NULL);
    CHECK(d != NULL && strcmp(d->digest, D2) == 0);
    d = oci_index_find(&idx, "linux", "arm64", "v8");
    CHECK(d != NULL && strcmp(d->digest, D1) == 0);
    CHECK(oci_index_find(&idx, "linux", "s390x", NULL) == NULL);
    oci_index_free(&idx);
}

static void digests_are_strict(void)
{
    CHECK(oci_digest_valid(D1));
    CHECK(!oci_digest_valid("sha256:ABCD"));
    CHECK(!oci_digest_valid(D1 "0"));
    CHECK(!oci_digest_valid(
        "sha256:111111111111111111111111111111111111111111111111111111111111111G"));
    char out[OCI_DIGEST_BUF];
    oci_digest_buf("", 0, out);
    CHECK_STR(out, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

void suite_image(void)
{
    RUN_TEST(private_names);
    RUN_TEST(parses_manifest);
    RUN_TEST(rejects_bad_manifests);
    RUN_TEST(rejects_unknown_layer_types);
    RUN_TEST(parses_config);
    RUN_TEST(index_picks_platform);
    RUN_TEST(digests_are_strict);
}
