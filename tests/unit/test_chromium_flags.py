"""Chromium's command line: features turned off are merged into one --disable-features,
the only one Chromium reads when given several."""

from deskbox.common.chromium import with_disabled_features


def test_features_are_added_to_the_one_disable_features_flag_a_user_gave():
    flags = with_disabled_features(["--disable-features=Translate,", "--lang=en"], ("LocalNetworkAccessChecks",))
    assert flags == ["--lang=en", "--disable-features=Translate,LocalNetworkAccessChecks"]


def test_several_disable_features_flags_become_one_and_nothing_is_named_twice():
    flags = with_disabled_features(["--disable-features=A", "--disable-features=B,A"], ("B", "C"))
    assert flags == ["--disable-features=A,B,C"]


def test_no_flag_is_added_when_nothing_is_turned_off():
    assert with_disabled_features(["--lang=en"], ()) == ["--lang=en"]
