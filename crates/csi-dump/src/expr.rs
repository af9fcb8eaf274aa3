//! The C expressions a debugger's watch and `evaluate` take: names, `.`, `->`, unary `*` and
//! `&`, `[]`, casts to named types, `sizeof`, arithmetic, comparisons and logic, with C's
//! precedence. Parsing only; `values` evaluates against a crashed process.

/// A parsed expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Name(String),
    /// An integer literal with its C type (`int`, `long`, `unsigned long`...).
    Int {
        value: i128,
        size: u8,
        signed: bool,
    },
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Member(Box<Expr>, String),
    Arrow(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Cast(TypeName, Box<Expr>),
    SizeOfType(TypeName),
    SizeOfExpr(Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
    BitNot,
    Deref,
    AddressOf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

/// A type as written in a cast: its base spelling (`struct node`, `unsigned int`, `size_t`)
/// and how many `*` follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeName {
    pub base: String,
    pub pointers: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Int(i128, u8, bool),
    Punct(&'static str),
}

const PUNCTS: [&str; 27] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "&",
    "|", "^", "!", "~", "(", ")", "[", "]", ".", ",",
];

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            // C++ scopes (`ns::name`) stay one name.
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'_'
                    || (b[i] == b':' && b.get(i + 1) == Some(&b':')))
            {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            out.push(Token::Ident(text[start..i].to_string()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(int_literal(&text[start..i])?);
        } else if c == b'\'' {
            let (v, len) = char_literal(&b[i..])
                .ok_or_else(|| format!("bad character literal at column {}", i + 1))?;
            out.push(Token::Int(v as i128, 4, true));
            i += len;
        } else if let Some(p) = PUNCTS.iter().find(|p| b[i..].starts_with(p.as_bytes())) {
            out.push(Token::Punct(p));
            i += p.len();
        } else {
            return Err(format!(
                "unexpected `{}` at column {}",
                text[i..].chars().next().unwrap_or('?'),
                i + 1
            ));
        }
    }
    Ok(out)
}

/// `42`, `0x2a`, `052`, with `u`/`l` suffixes, typed as C types them (`int` while it fits).
fn int_literal(s: &str) -> Result<Token, String> {
    let lower = s.to_ascii_lowercase();
    let digits = lower.trim_end_matches(['u', 'l']);
    let suffix = &lower[digits.len()..];
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let v = u64::from_str_radix(body, radix).map_err(|_| format!("bad number `{s}`"))?;
    let unsigned = suffix.contains('u');
    let long = suffix.contains('l');
    let (size, signed) = if !long && !unsigned && v <= i32::MAX as u64 {
        (4, true)
    } else if !long && unsigned && v <= u32::MAX as u64 {
        (4, false)
    } else if !unsigned && v <= i64::MAX as u64 {
        (8, true)
    } else {
        (8, false)
    };
    Ok(Token::Int(v as i128, size, signed))
}

fn char_literal(b: &[u8]) -> Option<(u8, usize)> {
    match (b.get(1)?, b.get(2)?) {
        (b'\\', c) => {
            let v = match c {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'0' => 0,
                b'\\' => b'\\',
                b'\'' => b'\'',
                _ => return None,
            };
            (b.get(3) == Some(&b'\'')).then_some((v, 4))
        }
        (&c, b'\'') => Some((c, 3)),
        _ => None,
    }
}

const TYPE_WORDS: [&str; 13] = [
    "struct", "union", "enum", "class", "unsigned", "signed", "int", "char", "long", "short",
    "float", "double", "void",
];

/// Parses `text`; `is_type` says whether an identifier names a type (a typedef), which decides
/// whether `(name)x` is a cast.
pub fn parse(text: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err("empty expression".into());
    }
    let mut p = Parser {
        tokens,
        pos: 0,
        is_type,
    };
    let e = p.binary(0)?;
    match p.tokens.get(p.pos) {
        None => Ok(e),
        Some(t) => Err(format!("unexpected {} after the expression", show(t))),
    }
}

fn show(t: &Token) -> String {
    match t {
        Token::Ident(s) => format!("`{s}`"),
        Token::Int(v, ..) => format!("`{v}`"),
        Token::Punct(p) => format!("`{p}`"),
    }
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    is_type: &'a dyn Fn(&str) -> bool,
}

/// Binary operators by precedence level, loosest first.
const LEVELS: [&[(&str, BinaryOp)]; 10] = [
    &[("||", BinaryOp::Or)],
    &[("&&", BinaryOp::And)],
    &[("|", BinaryOp::BitOr)],
    &[("^", BinaryOp::BitXor)],
    &[("&", BinaryOp::BitAnd)],
    &[("==", BinaryOp::Eq), ("!=", BinaryOp::Ne)],
    &[
        ("<", BinaryOp::Lt),
        (">", BinaryOp::Gt),
        ("<=", BinaryOp::Le),
        (">=", BinaryOp::Ge),
    ],
    &[("<<", BinaryOp::Shl), (">>", BinaryOp::Shr)],
    &[("+", BinaryOp::Add), ("-", BinaryOp::Sub)],
    &[
        ("*", BinaryOp::Mul),
        ("/", BinaryOp::Div),
        ("%", BinaryOp::Rem),
    ],
];

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(q)) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(t) => format!("expected `{p}`, found {}", show(t)),
                None => format!("expected `{p}` at the end"),
            })
        }
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        'outer: loop {
            for &(p, op) in LEVELS[level] {
                if self.eat(p) {
                    let rhs = self.binary(level + 1)?;
                    lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
                    continue 'outer;
                }
            }
            return Ok(lhs);
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        for (p, op) in [
            ("-", UnaryOp::Neg),
            ("!", UnaryOp::Not),
            ("~", UnaryOp::BitNot),
            ("*", UnaryOp::Deref),
            ("&", UnaryOp::AddressOf),
        ] {
            if self.eat(p) {
                return Ok(Expr::Unary(op, Box::new(self.unary()?)));
            }
        }
        if self.eat("+") {
            return self.unary();
        }
        if matches!(self.peek(), Some(Token::Ident(s)) if s == "sizeof") {
            self.pos += 1;
            if self.starts_type_in_parens() {
                self.expect("(")?;
                let t = self.type_name()?;
                self.expect(")")?;
                return Ok(Expr::SizeOfType(t));
            }
            return Ok(Expr::SizeOfExpr(Box::new(self.unary()?)));
        }
        if self.starts_type_in_parens() {
            self.expect("(")?;
            let t = self.type_name()?;
            self.expect(")")?;
            return Ok(Expr::Cast(t, Box::new(self.unary()?)));
        }
        self.postfix()
    }

    fn starts_type_in_parens(&self) -> bool {
        matches!(self.peek(), Some(Token::Punct("(")))
            && matches!(self.tokens.get(self.pos + 1), Some(Token::Ident(s))
                if TYPE_WORDS.contains(&s.as_str()) || s == "const" || s == "volatile" || (self.is_type)(s))
    }

    fn type_name(&mut self) -> Result<TypeName, String> {
        let mut words: Vec<String> = Vec::new();
        while let Some(Token::Ident(s)) = self.peek() {
            let s = s.clone();
            if s == "const" || s == "volatile" {
                self.pos += 1;
                continue;
            }
            let tagged = matches!(
                words.last().map(String::as_str),
                Some("struct" | "union" | "enum" | "class")
            );
            if !words.is_empty() && !tagged && !TYPE_WORDS.contains(&s.as_str()) {
                break;
            }
            words.push(s);
            self.pos += 1;
        }
        if words.is_empty() {
            return Err("expected a type name".into());
        }
        if words.len() == 1 && matches!(words[0].as_str(), "struct" | "union" | "enum" | "class") {
            return Err(format!("`{}` needs a name", words[0]));
        }
        let mut pointers = 0;
        while self.eat("*") {
            pointers += 1;
            while matches!(self.peek(), Some(Token::Ident(s)) if s == "const" || s == "volatile") {
                self.pos += 1;
            }
        }
        if words[0] == "class" {
            words[0] = "struct".into();
        }
        Ok(TypeName {
            base: words.join(" "),
            pointers,
        })
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        loop {
            if self.eat("[") {
                let i = self.binary(0)?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(i));
            } else if self.eat(".") {
                e = Expr::Member(Box::new(e), self.ident()?);
            } else if self.eat("->") {
                e = Expr::Arrow(Box::new(e), self.ident()?);
            } else {
                return Ok(e);
            }
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Ident(s)) => {
                self.pos += 1;
                Ok(s)
            }
            Some(t) => Err(format!("expected a member name, found {}", show(&t))),
            None => Err("expected a member name at the end".into()),
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Ident(s)) => {
                self.pos += 1;
                Ok(Expr::Name(s))
            }
            Some(Token::Int(value, size, signed)) => {
                self.pos += 1;
                Ok(Expr::Int {
                    value,
                    size,
                    signed,
                })
            }
            Some(Token::Punct("(")) => {
                self.pos += 1;
                let e = self.binary(0)?;
                self.expect(")")?;
                Ok(e)
            }
            Some(t) => Err(format!("unexpected {}", show(&t))),
            None => Err("the expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse(s, &|n| n == "list_t").unwrap()
    }

    #[test]
    fn precedence_and_postfix() {
        assert_eq!(
            p("a + b * c"),
            Expr::Binary(
                BinaryOp::Add,
                Box::new(Expr::Name("a".into())),
                Box::new(Expr::Binary(
                    BinaryOp::Mul,
                    Box::new(Expr::Name("b".into())),
                    Box::new(Expr::Name("c".into()))
                ))
            )
        );
        assert_eq!(
            p("*p->next[2].v"),
            Expr::Unary(
                UnaryOp::Deref,
                Box::new(Expr::Member(
                    Box::new(Expr::Index(
                        Box::new(Expr::Arrow(Box::new(Expr::Name("p".into())), "next".into())),
                        Box::new(Expr::Int {
                            value: 2,
                            size: 4,
                            signed: true
                        })
                    )),
                    "v".into()
                ))
            )
        );
    }

    #[test]
    fn casts_need_a_type() {
        assert!(matches!(
            p("(struct node *)p"),
            Expr::Cast(TypeName { pointers: 1, .. }, _)
        ));
        assert!(matches!(p("(list_t*)p"), Expr::Cast(..)));
        assert!(
            matches!(p("(unsigned long)x"), Expr::Cast(TypeName { ref base, .. }, _) if base == "unsigned long")
        );
        // A parenthesised name that is not a type is a grouping.
        assert_eq!(p("(x)"), Expr::Name("x".into()));
        assert!(matches!(p("sizeof(struct node)"), Expr::SizeOfType(_)));
        assert!(matches!(p("sizeof x"), Expr::SizeOfExpr(_)));
    }

    #[test]
    fn literals_are_typed_like_c() {
        assert_eq!(
            p("0x10"),
            Expr::Int {
                value: 16,
                size: 4,
                signed: true
            }
        );
        assert_eq!(
            p("3000000000"),
            Expr::Int {
                value: 3_000_000_000,
                size: 8,
                signed: true
            }
        );
        assert_eq!(
            p("1ul"),
            Expr::Int {
                value: 1,
                size: 8,
                signed: false
            }
        );
        assert_eq!(
            p("'a'"),
            Expr::Int {
                value: 97,
                size: 4,
                signed: true
            }
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for s in [
            "",
            "a +",
            "(",
            "a[",
            "p->",
            "1 2",
            "@",
            "'",
            "'ab'",
            "0xzz",
            "(struct)x",
            "99999999999999999999999",
        ] {
            assert!(parse(s, &|_| false).is_err(), "{s:?} parsed");
        }
    }
}
