//! Inline interpreter code against the shipped harmless subsets
//! (`[gate.shell.code.python]`, `[gate.shell.code.javascript]`): code that
//! only prints, computes, reads JSON or looks at the environment passes;
//! imports, calls and attributes outside the lists, internals
//! (`__class__`, `constructor`) and code that does not parse do not.

use toolgate::gate::code::{CodeProblem, check};
use toolgate::gate::config::shipped;

fn rules(lang: &str) -> toolgate::plan::gate::code::CodeRules {
    shipped().shell.code[lang].clone()
}

#[test]
fn python_harmless_code_passes_and_the_rest_does_not() {
    let r = rules("python");
    let ok = [
        "print(42)",
        "import sys; print(sys.version)",
        "import json,sys; print(json.load(sys.stdin)['name'])",
        "print(sum(x*x for x in range(10)))",
        "print('mkfs.ext4 /dev/sda1 is dangerous')",
        "import os; print(os.getcwd())",
        "import os.path; print(os.path.join('a', 'b'))",
        "from os.path import join; print(join('a','b'))",
        "import math; print(math.sqrt(2))",
        "def f(x):\n    return x * 2\nprint(f(3))",
        "xs = [3,1,2]; print(sorted(xs, key=lambda v: -v))",
        "import datetime; print(datetime.datetime.now().isoformat())",
        "if __name__ == '__main__': print('hi')",
        "import collections; print(collections.Counter('hello').most_common(1))",
        "print(', '.join(map(str, [1,2,3])))",
        "print(list(map(str.upper, ['a'])))",
        "import platform; print(platform.python_version())",
        "f = lambda x: x + 1\nprint(f(1))",
    ];
    for c in ok {
        assert_eq!(check(&r, c), Ok(()), "{c}");
    }
    let bad = [
        "import os; os.system('mkfs.ext4 /dev/sda1')",
        "__import__('os').system('id')",
        "import subprocess; subprocess.run(['rm','-rf','/'])",
        "open('/etc/passwd').read()",
        "eval('1+1')",
        "exec('import os')",
        "().__class__.__bases__[0].__subclasses__()",
        "import os as o; o.system('id')",
        "from os import system; system('id')",
        "from os import *",
        "import platform; platform.os.system('id')",
        "f = eval; f('1')",
        "print(list(map(eval, ['1'])))",
        "getattr(__builtins__, 'eval')('1')",
        "import shutil; shutil.rmtree('/')",
        "x = []; x.unlink()",
        "g = (i for i in []); g.gi_frame.f_globals",
        "import sys; sys.modules['os'].system('id')",
        "print(globals())",
        "compile('x','f','exec')",
        "def f(): pass\nf.__globals__",
        "class A(metaclass=type): pass",
        "breakpoint()",
        "import os; os.remove('x')",
        "print(1",
    ];
    for c in bad {
        assert!(check(&r, c).is_err(), "{c}");
    }
}

#[test]
fn javascript_harmless_code_passes_and_the_rest_does_not() {
    let r = rules("javascript");
    let ok = [
        "console.log(1)",
        "console.log(process.version)",
        "console.log(JSON.parse(require('fs').readFileSync('package.json','utf8')).version)",
        "const x=[1,2,3].map(a=>a*2); console.log(x)",
        "const path = require('path'); console.log(path.join('a','b'))",
        "const { join } = require('path'); console.log(join('a', 'b'))",
        "function f(a) { return a + 1 } console.log(f(2))",
        "console.log(Object.keys(process.env).length)",
        "console.log(new Date().toISOString())",
        "process.stdout.write('hi\\n')",
        "console.log(`v=${process.versions.node}`)",
        "import fs from 'fs'; console.log(fs.existsSync('x'))",
        "console.log(Math.max(...[1,2]))",
        "let s = 0; for (const k of [1,2]) { s += k } console.log(s)",
        "console.log(require('os').platform())",
    ];
    for c in ok {
        assert_eq!(check(&r, c), Ok(()), "{c}");
    }
    let bad = [
        "require('child_process').execSync('rm -rf ~')",
        "const cp = require('child_process'); cp.exec('id')",
        "eval('1')",
        "new Function('return 1')()",
        "[].constructor.constructor('return process')()",
        "process.binding('spawn_sync')",
        "process.mainModule.require('child_process')",
        "require('fs').writeFileSync('/etc/x', 'y')",
        "require('fs').rmSync('/', {recursive: true})",
        "const m = 'child_' + 'process'; require(m)",
        "import('child_process').then(m => m.exec('id'))",
        "globalThis.process",
        "const f = console.log; f.call(null, 1)",
        "Object.prototype.x = 1",
        "process['binding']('x')",
        "const p = process; p.kill(1)",
        "[1].map(eval)",
        "with (process) { exit() }",
        "console.log(1",
        "x.__proto__",
        "require('fs')['writeFileSync']('a','b')",
        "const k = 'writeFileSync'; require('fs')[k]('a', 'b')",
    ];
    for c in bad {
        assert!(check(&r, c).is_err(), "{c}");
    }
}

#[test]
fn problems_say_what_the_code_uses() {
    let r = rules("python");
    match check(&r, "import os; os.system('id')") {
        Err(CodeProblem::Uses(u)) => assert!(u.iter().any(|x| x.contains("os.system")), "{u:?}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(check(&r, "print(1"), Err(CodeProblem::Parse(_))));
    let long = "print(1)\n".repeat(2000);
    assert!(matches!(check(&r, &long), Err(CodeProblem::TooComplex(_))));
    let deep = format!("print({}1{})", "abs(".repeat(90), ")".repeat(90));
    assert!(matches!(check(&r, &deep), Err(CodeProblem::TooComplex(_))));
    let mut none = r.clone();
    none.parser = "perl".into();
    assert!(matches!(
        check(&none, "print 1"),
        Err(CodeProblem::NoParser(_))
    ));
}

#[test]
fn deep_or_odd_code_never_panics() {
    let py = rules("python");
    let js = rules("javascript");
    for code in [
        "not ".repeat(2000) + "x",
        "-".repeat(4000) + "1",
        "lambda: ".repeat(1000) + "1",
        "[".repeat(3000),
        "\u{0}\u{feff}".into(),
        "\"\"\"".into(),
    ] {
        let _ = check(&py, &code);
    }
    for code in [
        "!".repeat(4000) + "x",
        "(".repeat(3000),
        "a=>".repeat(1000) + "1",
        "`${".repeat(500),
    ] {
        let _ = check(&js, &code);
    }
}
