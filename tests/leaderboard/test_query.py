"""Numbers in query strings: a superscript or another script's digit is no page number and no
level, and no page answers a server error for one."""

from __future__ import annotations

import pytest

from leaderboard.web.query import whole_number

NOT_ASCII_DIGITS = ["²", "٣", "１", "1²", "-1", "1e3", " 1", ""]


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS)
def test_only_ascii_digits_spell_a_whole_number(text):
    assert whole_number(text) is None


def test_a_whole_number_is_read_within_its_length():
    assert whole_number("0042") == 42
    assert whole_number("1234567", max_digits=6) is None


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/?page=", "/concurrency/?level=", "/api/v1/leaderboard?page="])
@pytest.mark.parametrize("value", ["²", "٣", "１"])
def test_pages_read_a_unicode_digit_as_no_number_not_as_a_server_error(client, path, value):
    response = client.get(path + value)
    assert response.status_code in {200, 404}, response.status_code
