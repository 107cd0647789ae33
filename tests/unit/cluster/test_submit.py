from pathlib import Path

import pytest

from nerplat.cluster.submit import auth_headers, refuse_token_over_plain_http
from nerplat.errors import UserInputError


def test_token_from_environment_becomes_a_bearer_header():
    assert auth_headers({"RAY_AUTH_TOKEN": " abc \n"}) == {"Authorization": "Bearer abc"}
    assert auth_headers({}) == {}


def test_token_file_is_read_when_no_token_variable(tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("from-file\n")
    assert auth_headers({"RAY_AUTH_TOKEN_PATH": str(token)}) == {"Authorization": "Bearer from-file"}
    assert auth_headers({"RAY_AUTH_TOKEN": "direct", "RAY_AUTH_TOKEN_PATH": str(token)}) == {"Authorization": "Bearer direct"}


def test_unreadable_token_file_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserInputError, match="RAY_AUTH_TOKEN_PATH"):
        auth_headers({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})


@pytest.mark.parametrize("address", ["http://10.0.0.5:8265", "http://ray.example.com:8265", "10.0.0.5:8265", "HTTP://ray.example.com"])
def test_the_token_is_not_sent_in_clear_to_another_machine(address):
    with pytest.raises(UserInputError) as error:
        refuse_token_over_plain_http(address, sends_token=True, allow_plain_http=False)
    message = str(error.value)
    assert address in message and "https://" in message and "--allow-plain-http" in message


@pytest.mark.parametrize(
    "address", ["http://127.0.0.1:8265", "http://localhost:8265", "http://[::1]:8265", "127.0.0.1:8265", "https://ray.example.com:8265"]
)
def test_loopback_and_https_may_carry_the_token(address):
    refuse_token_over_plain_http(address, sends_token=True, allow_plain_http=False)


def test_plain_http_elsewhere_is_allowed_when_asked_or_without_a_token():
    refuse_token_over_plain_http("http://10.0.0.5:8265", sends_token=True, allow_plain_http=True)
    refuse_token_over_plain_http("http://10.0.0.5:8265", sends_token=False, allow_plain_http=False)
