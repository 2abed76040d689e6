"use client";

import { useState, type ReactNode } from "react";
import { AppHeader } from "./app-header";
import { AppNav } from "./app-nav";

const NAV_ID = "main-nav";

/** Header, navigation and the page; the menu button only shows at narrow widths (CSS). */
export function ConsoleShell({ children }: { children: ReactNode }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = (
    <button
      type="button"
      className="button menu-button"
      aria-expanded={menuOpen}
      aria-controls={NAV_ID}
      onClick={() => setMenuOpen((open) => !open)}
    >
      Menu
    </button>
  );
  return (
    <div className="app">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <AppHeader menuButton={menuButton} />
      <div className="app-body">
        <AppNav id={NAV_ID} open={menuOpen} onNavigate={() => setMenuOpen(false)} />
        <main id="main" className="app-main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}
